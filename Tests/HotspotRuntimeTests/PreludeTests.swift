import Foundation
@testable import HotspotRuntime
import LuaSandbox
import Testing

/// The prelude is Lua in Sources/HotspotRuntime/Prelude, files by topic which the EmbedLua
/// plugin embeds at build time: checked here as Lua, so a mistake in one fails with its file
/// and line.
@Suite struct PreludeTests {
    static let preludeFolder = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .appendingPathComponent("../../Sources/HotspotRuntime/Prelude").standardized.path

    static func preludeFiles() throws -> [String] {
        try FileManager.default.contentsOfDirectory(atPath: preludeFolder).filter { $0.hasSuffix(".lua") }.sorted()
    }

    /// One file at a time: Debian's luac5.4 frees twice when given several with -p.
    @Test(arguments: try preludeFiles()) func thePreludeFileCompiles(_ file: String) throws {
        let luac = try #require(Self.executableOnPath("luac5.4"), "luac5.4 (Debian's lua5.4 package) is not on the PATH")
        let process = Process()
        process.executableURL = URL(fileURLWithPath: luac)
        process.arguments = ["-p", "\(Self.preludeFolder)/\(file)"]  // -p: parse only, no luac.out
        let errors = Pipe()
        process.standardError = errors
        try process.run()
        let report = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        #expect(process.terminationStatus == 0, "\(report)")  // luac's report names the file and line
    }

    /// Every file of the folder is in the prelude, as it is on disk: a file added and not
    /// joined would be dead code.
    @Test func theBuildEmbedsEveryFileExactly() throws {
        #expect(try Self.preludeFiles() == HelperPrelude.files.map { "\($0.name).lua" }.sorted())
        for file in HelperPrelude.files {
            #expect(file.text == (try String(contentsOfFile: "\(Self.preludeFolder)/\(file.name).lua", encoding: .utf8)), "\(file.name)")
        }
    }

    /// What the Swift side puts before the files stays on the first one's first line, so
    /// errors in it name its lines.
    @Test func theContractKeepsTheFileLines() throws {
        let joined = HelperPrelude.files.map(\.text).joined()
        #expect(HelperPrelude.text.split(separator: "\n", omittingEmptySubsequences: false).count
            == joined.split(separator: "\n", omittingEmptySubsequences: false).count)
        #expect(HelperPrelude.text.hasSuffix(joined))
        #expect(HelperPrelude.text.hasPrefix("local CONTRACT = {"))
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
