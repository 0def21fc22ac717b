import Foundation
import LuaSandbox
import Synchronization
import Testing
@testable import HotspotRuntime
import HotspotCore

@Suite("Helper catalog")
struct HelperCatalogTests {
    @Test func refreshLoadsWhatChangedAndKeepsTheLastGoodVersion() async throws {
        let directory = RuntimeFixture.temporaryDirectory()
        let engine = try LuaEngine(HotspotRuntime.engineConfiguration(workerCount: 1))
        defer { engine.shutdown() }
        let catalog = HelperCatalog(path: directory, engine: engine, retirementDelay: .milliseconds(10))
        try venue("One", confidence: "high").write(toFile: directory + "/one.lua", atomically: true, encoding: .utf8)
        try venue("Two").write(toFile: directory + "/two.lua", atomically: true, encoding: .utf8)
        #expect(await catalog.refresh() == HelperCatalog.Change(added: ["one", "two"]))
        #expect(await catalog.refresh() == HelperCatalog.Change(), "the same text is not loaded again")

        try venue("One again", confidence: "high").write(toFile: directory + "/one.lua", atomically: true, encoding: .utf8)
        #expect(await catalog.refresh() == HelperCatalog.Change(reloaded: ["one"]))
        #expect(await catalog.helpers.map(\.displayName) == ["One again", "Two"])

        try "return {\n  name = 'Broken', hosts = {},\n  evaluate = 'no',\n}".write(toFile: directory + "/one.lua", atomically: true, encoding: .utf8)
        let broken = await catalog.refresh()
        #expect(!broken.changesHelpers)
        #expect(broken.problems.map(\.location) == [directory + "/one.lua:3"])
        #expect(await catalog.helpers.map(\.displayName) == ["One again", "Two"], "the last good version stays")
        let lastGood = try #require(await catalog.helpers.first)
        try await Task.sleep(for: .milliseconds(50))
        #expect(try await engine.call(lastGood.handle, "describe").get().first?.tableValue?["name"] == "One again",
                "the last good version still answers")

        try FileManager.default.removeItem(atPath: directory + "/two.lua")
        #expect(await catalog.refresh().removed == ["two"])
        #expect(await catalog.helpers.map(\.id) == ["one"])
    }
}

@Suite("Script watcher")
struct ScriptWatcherTests {
    /// Writes and closes the file at once: Foundation may close a file it wrote later, and
    /// that close would count as a save while the test watches.
    static func save(_ text: String, to path: String) {
        let file = fopen(path, "w")!
        fputs(text, file)
        fclose(file)
    }

    /// Saves as editors do: a temporary file renamed over the script.
    static func saveByRenaming(_ text: String, to path: String) {
        save(text, to: path + ".tmp~")
        rename(path + ".tmp~", path)
    }

    /// Counts the changes reported, until the watcher stops.
    final class Changes: Sendable {
        private final class Counter: Sendable {
            let count = Mutex(0)
        }

        private let counter = Counter()
        let task: Task<Void, Never>

        init(_ watcher: ScriptWatcher) {
            let counter = self.counter
            task = Task {
                for await _ in watcher.changes { counter.count.withLock { $0 += 1 } }
            }
        }

        var value: Int { counter.count.withLock { $0 } }
    }

    @Test func reportsSavesRenamesAndDeletionsOfScriptsOnly() async throws {
        let directory = RuntimeFixture.temporaryDirectory()
        let watcher = try ScriptWatcher(path: directory)
        let changes = Changes(watcher)
        Self.save("-- a", to: directory + "/venue.lua")
        try await eventually("the save of venue.lua reported") { changes.value == 1 }
        #expect(changes.value == 1)

        Self.save("not a script", to: directory + "/notes.txt")
        try await Task.sleep(for: .milliseconds(200))
        #expect(changes.value == 1, "other files are not scripts")

        Self.save("-- b", to: directory + "/.venue.lua.swp")
        try FileManager.default.moveItem(atPath: directory + "/.venue.lua.swp", toPath: directory + "/other.lua")
        try await eventually("the rename to other.lua reported") { changes.value == 2 }
        try FileManager.default.removeItem(atPath: directory + "/other.lua")
        try await eventually("the deletion of other.lua reported") { changes.value == 3 }
        #expect(changes.value == 3)
        watcher.stop()
        await changes.task.value
    }

    @Test func aFileIsWatchedThroughItsDirectory() async throws {
        let directory = RuntimeFixture.temporaryDirectory()
        Self.save("-- a", to: directory + "/venue.lua")
        let watcher = try ScriptWatcher(path: directory + "/venue.lua")
        let changes = Changes(watcher)
        Self.saveByRenaming("-- other", to: directory + "/other.lua")
        try await Task.sleep(for: .milliseconds(200))
        #expect(changes.value == 0, "only the watched file counts")
        Self.saveByRenaming("-- b", to: directory + "/venue.lua")
        try await eventually("the save of the watched file reported") { changes.value == 1 }
        #expect(changes.value == 1)
        watcher.stop()
        await changes.task.value
        #expect(throws: ScriptWatcher.WatchError.self) { try ScriptWatcher(path: directory + "/missing.lua") }
    }
}

@Suite("Control socket")
struct ControlSocketTests {
    @Test func answersRequestsOnAnOwnerOnlySocketAndRefusesASecondServer() async throws {
        let path = RuntimeFixture.temporaryDirectory() + "/" + ControlServer.fileName
        let seen = Mutex<[ControlRequest]>([])
        let server = try ControlServer(path: path) { request in
            seen.withLock { $0.append(request) }
            return ControlReply(ok: true, message: "did \(request.command.rawValue)", state: .authenticated)
        }
        let mode = try #require(FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? Int)
        #expect(mode == 0o600)
        let request = ControlRequest(command: .ui, network: "Cafe", answers: ["email": "a@example.org"])
        let reply = try await Task.detached { try ControlClient.send(request, to: path) }.value
        #expect(reply == ControlReply(ok: true, message: "did ui", state: .authenticated))
        #expect(seen.withLock { $0 } == [request])

        #expect(throws: ControlSocketError.self) { try ControlServer(path: path) { _ in ControlReply(ok: true, message: "") } }

        server.stop()
        #expect(!FileManager.default.fileExists(atPath: path))
        #expect(throws: ControlSocketError.self) { try ControlClient.send(request, to: path) }
    }

    @Test func aStaleSocketFileIsReplacedAndGarbageIsRefused() async throws {
        let path = RuntimeFixture.temporaryDirectory() + "/" + ControlServer.fileName
        // A socket file nobody listens on, as a killed daemon leaves it.
        let stale = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        var address = try ControlServer.address(path)
        _ = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(stale, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        close(stale)
        #expect(FileManager.default.fileExists(atPath: path))
        let server = try ControlServer(path: path) { _ in ControlReply(ok: true, message: "fine") }
        defer { server.stop() }

        let answer = try await Task.detached { () throws -> String in
            let descriptor = try ControlServer.connect(path)
            defer { close(descriptor) }
            _ = ControlServer.writeAll(descriptor, Array("not json\n".utf8))
            return String(decoding: ControlServer.readLine(descriptor, limit: 4096) ?? [], as: UTF8.self)
        }.value
        #expect(answer.contains("not a control request in JSON"))
        #expect(answer.contains("\"ok\":false"))
    }

    @Test func aPathTooLongForASocketIsAClearError() {
        let path = "/tmp/" + String(repeating: "d", count: 120) + "/control.sock"
        #expect {
            try ControlServer(path: path) { _ in ControlReply(ok: true, message: "") }
        } throws: { error in
            (error as? ControlSocketError)?.description.contains("use a shorter --state-dir") == true
        }
    }
}

@Suite("Replacing helpers")
struct ReplacingHelpersTests {
    /// A network keeps its session across a reload; when its helper is gone, the next
    /// maintain evaluates again and another helper takes it.
    @Test func aRemovedHelpersNetworkIsEvaluatedAgainAtItsNextMaintain() async throws {
        let fixture = try await RuntimeFixture(scripts: [
            "first": venue("First", confidence: "high", handlers: ["authenticate": "return 'success'", "maintain": "return 'success'"]),
            "second": venue("Second", confidence: "low", handlers: ["authenticate": "return 'success'"]),
        ])
        #expect(await fixture.runtime.join(guest) == .authenticated)
        #expect(await fixture.runtime.chosenHelper(of: guest.ssid) == "first")
        let second = try #require(await fixture.runtime.helpers.first { $0.id == "second" })
        await fixture.runtime.replaceHelpers([second])
        #expect(fixture.events.logs.contains { $0.message.contains("the helper first of Venue-Guest was removed") })
        #expect(await fixture.runtime.state(of: guest.ssid) == .authenticated)
        #expect(await fixture.runtime.maintain(guest.ssid) == .authenticated)
        #expect(await fixture.runtime.chosenHelper(of: guest.ssid) == "second")
        #expect(fixture.persistenceChosenHelper == "second")
    }

    /// A helper's own table is kept encoded from one command to the next; a reload that
    /// changes its hosts must reach its next command.
    @Test func aReloadedHelpersNewHostsReachItsNextCommand() async throws {
        func script(hosts: String) -> String {
            """
            return {
              name = "Venue", hosts = { \(hosts) },
              evaluate = function(cmd)
                local _, problem = cmd:http{ url = "http://127.0.0.1:1/" }
                log.info(problem)
                return "none"
              end,
            }
            """
        }
        let fixture = try await RuntimeFixture(scripts: ["venue": script(hosts: #""portal.example""#)])
        defer { fixture.engine.shutdown() }
        func problems() -> [String] { fixture.events.logs.filter { $0.helper == "venue" }.map(\.message) }
        #expect(await fixture.runtime.join(guest) == .authenticated)
        #expect(problems() == ["not_allowed: 127.0.0.1"])
        try script(hosts: #""127.0.0.1""#).write(toFile: fixture.scripts + "/venue.lua", atomically: true, encoding: .utf8)
        let catalog = HelperCatalog(path: fixture.scripts, engine: fixture.engine)
        await catalog.refresh()
        await fixture.runtime.replaceHelpers(await catalog.helpers)
        #expect(await fixture.runtime.join(guest) == .authenticated)
        #expect(problems().count == 2 && problems().last?.hasPrefix("not_allowed") == false, "\(problems())")
    }

    /// The encodings kept between commands are those of the helpers loaded now.
    @Test func aRemovedHelpersEncodingIsNotKept() async throws {
        let venue = #"return { name = "Venue", hosts = { "portal.example" }, evaluate = function(cmd) return "none" end }"#
        let fixture = try await RuntimeFixture(scripts: ["first": venue, "second": venue])
        defer { fixture.engine.shutdown() }
        #expect(await fixture.runtime.join(guest) == .authenticated)
        #expect(fixture.runtime.transport.encodedHelperIDs == ["first", "second"])
        try FileManager.default.removeItem(atPath: fixture.scripts + "/second.lua")
        let catalog = HelperCatalog(path: fixture.scripts, engine: fixture.engine)
        await catalog.refresh()
        await fixture.runtime.replaceHelpers(await catalog.helpers)
        #expect(fixture.runtime.transport.encodedHelperIDs == ["first"])
    }
}

extension RuntimeFixture {
    var persistenceChosenHelper: String? {
        (try? StateDirectory(path: stateDirectory))?.snapshot.chosenHelpers[guest.ssid]
    }
}

@Suite("Foundation-free replacements")
struct FoundationFreeReplacementsTests {
    @Test(arguments: ["/a/b.lua", "/a/b/", "b.lua", "/b", "/", "", "a//b.lua", "/a/.hidden", "/a/b.tar.gz", "//a"])
    func pathComponentsAreNSStrings(_ path: String) {
        let reference = path as NSString
        #expect(path.pathLastComponent == reference.lastPathComponent)
        #expect(path.pathDeletingLastComponent == reference.deletingLastPathComponent)
        #expect(path.pathLastComponent.pathDeletingExtension == (reference.lastPathComponent as NSString).deletingPathExtension)
        #expect(path.pathAppending(component: "c.lua") == reference.appendingPathComponent("c.lua"))
    }

    @Test func aSubprocessGivesItsOutputAndExitStatus() throws {
        let printed = try #require(Subprocess.run("/bin/sh", ["-c", "echo out; echo err >&2; exit 3"]))
        #expect(printed.exitStatus == 3)
        #expect(String(decoding: printed.output, as: UTF8.self) == "out\n", "standard error is not the output")
        let killed = try #require(Subprocess.run("/bin/sh", ["-c", "kill -9 $$"]))
        #expect(killed.exitStatus == nil, "a signal is not an exit status")
        #expect(Subprocess.run("/nonexistent/program", []) == nil)
    }

    @Test func aSubprocessInheritsNoOtherDescriptor() throws {
        let leaked = open("/dev/null", O_RDONLY)
        defer { close(leaked) }
        let listed = try #require(Subprocess.run("/bin/ls", ["/proc/self/fd"]))
        let descriptors = String(decoding: listed.output, as: UTF8.self).split(separator: "\n").compactMap { Int32($0) }
        #expect(!descriptors.contains(leaked), "descriptors \(descriptors)")
        #expect(descriptors.allSatisfy { $0 <= 3 }, "the standard three, and ls's own directory")
    }

    @Test func numbersAreWrittenAsPrintfAndJSONWould() {
        let values = [0, 0.04, 0.06, 12.34, 12.96, -1.26, 999.96]
        #expect(values.map(\.withOneDecimal) == values.map { String(format: "%.1f", $0) })
        #expect([12, 12.5, -3, 1e20].map(\.plainDescription) == ["12", "12.5", "-3", "1e+20"])
    }
}
