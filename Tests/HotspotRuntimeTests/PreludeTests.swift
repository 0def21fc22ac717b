import Foundation
@testable import HotspotRuntime
import LuaSandbox
import Testing

/// The prelude is Lua in Sources/HotspotRuntime/Prelude, which the EmbedLua plugin embeds at
/// build time: checked here as Lua, so a mistake in it fails with its file and line.
@Suite struct PreludeTests {
    static let preludeFile = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .appendingPathComponent("../../Sources/HotspotRuntime/Prelude/prelude.lua").standardized.path

    @Test func thePreludeFileCompiles() throws {
        let luac = try #require(Self.executableOnPath("luac5.4"), "luac5.4 (Debian's lua5.4 package) is not on the PATH")
        let process = Process()
        process.executableURL = URL(fileURLWithPath: luac)
        process.arguments = ["-p", Self.preludeFile]  // -p: parse only, no luac.out
        let errors = Pipe()
        process.standardError = errors
        try process.run()
        let report = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        #expect(process.terminationStatus == 0, "\(report)")  // luac's report names the file and line
    }

    @Test func theBuildEmbedsTheFileExactly() throws {
        #expect(EmbeddedLua.prelude == (try String(contentsOfFile: Self.preludeFile, encoding: .utf8)))
    }

    /// What the Swift side puts before the file stays on its first line, so errors in the
    /// prelude name the file's lines.
    @Test func theContractKeepsTheFileLines() throws {
        let file = try String(contentsOfFile: Self.preludeFile, encoding: .utf8)
        #expect(HelperPrelude.text.split(separator: "\n", omittingEmptySubsequences: false).count
            == file.split(separator: "\n", omittingEmptySubsequences: false).count)
        #expect(HelperPrelude.text.hasSuffix(file))
    }

    static func executableOnPath(_ name: String) -> String? {
        let directories = (ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin").split(separator: ":")
        return directories.map { "\($0)/\(name)" }.first { FileManager.default.isExecutableFile(atPath: $0) }
    }

    /// A worker of this executable builds its first script's state with the helpers'
    /// prelude while its supervisor starts (`SandboxWorker.run`); an engine that configures
    /// another prelude has its scripts run with that one, and the helpers' works as before.
    @Test func aWorkerUsesThePreludeItsEngineConfigures() async throws {
        let plain = ScriptSource(path: "plain.lua", text: "return {}")
        var configuration = HotspotRuntime.engineConfiguration()
        configuration.prelude = ScriptSource(chunkName: "=other", text: Array("return { answer = function() return 42 end }".utf8))
        let other = try LuaEngine(configuration)
        defer { other.shutdown() }
        let script = try await other.load(plain)
        #expect(try await other.call(script, "answer").get() == [42])
        #expect((try? await other.call(script, "describe").get()) == nil)

        let helpers = try LuaEngine(HotspotRuntime.engineConfiguration())
        defer { helpers.shutdown() }
        let helper = try await helpers.load(plain)
        #expect((try? await helpers.call(helper, "describe").get()) != nil)
        #expect((try? await helpers.call(helper, "answer").get()) == nil)
    }
}
