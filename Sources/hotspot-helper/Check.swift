import ArgumentParser
import HotspotCommandLine
import FoundationEssentials
import HotspotRuntime
import LuaSandbox

struct Check: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "check",
        abstract: "Loads scripts in the sandbox without running a command, and reports every problem.",
        discussion: """
            Reports syntax errors, a returned value that is not a table, unknown or \
            non-function handlers, a display name over 15 characters, malformed hosts \
            patterns and `networks` declarations (an SSID, a BSSID prefix, a portal host, a \
            gateway family), each with file:line, and a network, portal host or gateway family \
            two scripts both declare. Exit status 1 when anything is wrong.

            Editors catch most mistakes before check does: docs/lua/hotspot-helper.lua \
            describes the whole script API for the Lua language server (add the docs/lua \
            folder to workspace.library in .luarc.json).
            """)

    @Argument(help: ArgumentHelp("Venue scripts, or directories of *.lua scripts.", valueName: "script"))
    var scripts: [String]

    func run() async throws {
        let output = EventOutput(json: false)
        let engine: LuaEngine
        do {
            engine = try LuaEngine(HotspotRuntime.engineConfiguration(workerCount: 1))
        } catch {
            output.fail("cannot start the script engine: \(error)")
            throw ExitCode(2)
        }
        defer { engine.shutdown() }
        var problems: [ScriptProblem] = []
        var checked = 0
        var helpers: [HelperScript] = []
        for path in scripts {
            checked += (try? HelperScript.scriptPaths(at: path).count) ?? 0
            let (loaded, found) = await HotspotRuntime.loadHelpers(at: path, into: engine)
            helpers += loaded
            problems += found
        }
        problems += HelperScript.sharedDeclarations(among: helpers)
        for problem in problems { print(problem.description) }
        if !problems.isEmpty {
            print("the script API, for editors that use the Lua language server: docs/lua/hotspot-helper.lua")
        }
        if problems.isEmpty {
            print("\(checked) script\(checked == 1 ? "" : "s") OK")
        } else {
            throw ExitCode(1)
        }
    }
}
