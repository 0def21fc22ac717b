import Foundation
import HotspotCore
@testable import HotspotRuntime
import LuaSandbox
import Testing

/// What keeps many helpers cheap: a refresh reads only the files whose identity changed, a
/// start describes declared scripts from the descriptions kept in the state directory, and a
/// declared helper's state built while its helper goes away is not kept.
@Suite struct CatalogAtScaleTests {
    static let count = 40

    static func scripts() throws -> String {
        let directory = RuntimeFixture.temporaryDirectory()
        for index in 0..<count {
            try LazyHelperStatesTests.declared(index).write(toFile: "\(directory)/\(LazyHelperStatesTests.helperID(index)).lua",
                                                            atomically: true, encoding: .utf8)
        }
        return directory
    }

    @Test func anUpdateOfOneScriptAmongManyReadsOnlyThatOne() async throws {
        let directory = try Self.scripts()
        let engine = try LuaEngine(HotspotRuntime.engineConfiguration())
        defer { engine.shutdown() }
        let catalog = HelperCatalog(path: directory, engine: engine, retirementDelay: .zero)
        #expect(await catalog.refresh().added.count == Self.count)
        #expect(await catalog.filesRead == Self.count)
        #expect(await catalog.refresh() == HelperCatalog.Change())
        #expect(await catalog.filesRead == Self.count, "an unchanged file is not read again")

        // Written in place: the same inode, another size.
        let id = LazyHelperStatesTests.helperID(7)
        let handle = try #require(FileHandle(forWritingAtPath: "\(directory)/\(id).lua"))
        try handle.seekToEnd()
        try handle.write(contentsOf: Data("\n-- version 2\n".utf8))
        try handle.close()
        #expect(await catalog.refresh() == HelperCatalog.Change(reloaded: [id]))
        #expect(await catalog.filesRead == Self.count + 1)
    }

    @Test func anEditKeepingTheSizeAndModificationTimeIsSeenByItsChangeTime() async throws {
        let directory = try Self.scripts()
        let engine = try LuaEngine(HotspotRuntime.engineConfiguration())
        defer { engine.shutdown() }
        let catalog = HelperCatalog(path: directory, engine: engine, retirementDelay: .zero)
        _ = await catalog.refresh()
        let id = LazyHelperStatesTests.helperID(3)
        let file = "\(directory)/\(id).lua"
        var before = stat()
        #expect(stat(file, &before) == 0)
        let edited = LazyHelperStatesTests.declared(3).replacingOccurrences(of: "Venue 3", with: "Venue X")
        var after = stat()
        // The kernel's clock ticks coarsely: edit until the change time has moved.
        try await eventually("the edit moved the change time") {
            try Self.overwrite(file, with: edited, keepingTimesOf: before)
            #expect(stat(file, &after) == 0)
            return (after.st_ctim.tv_sec, after.st_ctim.tv_nsec) != (before.st_ctim.tv_sec, before.st_ctim.tv_nsec)
        }
        #expect(after.st_size == before.st_size && after.st_ino == before.st_ino)
        #expect((after.st_mtim.tv_sec, after.st_mtim.tv_nsec) == (before.st_mtim.tv_sec, before.st_mtim.tv_nsec))
        #expect(await catalog.refresh() == HelperCatalog.Change(reloaded: [id]))
        #expect(await catalog.helpers.first { $0.id == id }?.displayName == "Venue X")
    }

    /// Writes `text` over the start of `file` in place, then sets its access and modification
    /// times back to those of `earlier`.
    static func overwrite(_ file: String, with text: String, keepingTimesOf earlier: stat) throws {
        let descriptor = open(file, O_WRONLY | O_CLOEXEC)
        guard descriptor >= 0 else { throw POSIXError(.EIO) }
        defer { close(descriptor) }
        let bytes = Array(text.utf8)
        guard write(descriptor, bytes, bytes.count) == bytes.count else { throw POSIXError(.EIO) }
        var times = [earlier.st_atim, earlier.st_mtim]
        guard futimens(descriptor, &times) == 0 else { throw POSIXError(.EIO) }
    }

    @Test func aSecondStartRunsNoScriptAndAChangedOneIsRunAgain() async throws {
        let directory = try Self.scripts()
        let state = RuntimeFixture.temporaryDirectory()
        func start() async throws -> (LuaEngine, HelperCatalog, HelperCatalog.Change) {
            let engine = try LuaEngine(HotspotRuntime.engineConfiguration())
            let catalog = HelperCatalog(path: directory, engine: engine, stateDirectory: state, runtimeVersion: "1.0")
            return (engine, catalog, await catalog.refresh())
        }
        let (first, firstCatalog, firstChange) = try await start()
        first.shutdown()
        #expect(firstChange.added.count == Self.count && firstChange.warnings.isEmpty)
        #expect(first.callsMade == Self.count)
        var status = stat()
        #expect(stat("\(state)/\(DescriptionCache.fileName)", &status) == 0 && status.st_mode & 0o777 == 0o600)

        let (second, secondCatalog, secondChange) = try await start()
        defer { second.shutdown() }
        #expect(secondChange.added.count == Self.count && secondChange.warnings.isEmpty)
        #expect(second.callsMade == 0, "no script ran")
        let described = { (helper: HelperScript) in
            [helper.id, helper.displayName, "\(helper.hosts.map(\.text))", "\(helper.handlers.sorted { $0.rawValue < $1.rawValue })",
             "\(String(describing: helper.declaredNetworks))"]
        }
        #expect(await secondCatalog.helpers.map(described) == firstCatalog.helpers.map(described))
        // A helper described from the cache works as one described by its run.
        let runtime = HotspotRuntime(engine: second, helpers: await secondCatalog.helpers, persistence: try StateDirectory(path: nil),
                                     events: { _ in })
        #expect(await runtime.join(LazyHelperStatesTests.network(5)) == .authenticated)

        let id = LazyHelperStatesTests.helperID(11)
        try (LazyHelperStatesTests.declared(11) + "\n-- version 2\n").write(toFile: "\(directory)/\(id).lua", atomically: true, encoding: .utf8)
        let (third, _, thirdChange) = try await start()
        third.shutdown()
        #expect(thirdChange.added.count == Self.count)
        #expect(third.callsMade == 1, "the changed script alone ran")
    }

    @Test func aCorruptOrForeignCacheIsIgnoredWithAWarningAndWrittenAgain() async throws {
        let directory = try Self.scripts()
        let state = RuntimeFixture.temporaryDirectory()
        let cache = "\(state)/\(DescriptionCache.fileName)"
        func start(version: String = "1.0") async throws -> (calls: Int, change: HelperCatalog.Change) {
            let engine = try LuaEngine(HotspotRuntime.engineConfiguration())
            defer { engine.shutdown() }
            let change = await HelperCatalog(path: directory, engine: engine, stateDirectory: state, runtimeVersion: version).refresh()
            return (engine.callsMade, change)
        }
        try "{\"runtime\": 7, \"descr\n00 {}\n".write(toFile: cache, atomically: true, encoding: .utf8)
        let corrupt = try await start()
        #expect(corrupt.calls == Self.count && corrupt.change.added.count == Self.count)
        #expect(corrupt.change.warnings.count == 1)
        #expect(corrupt.change.warnings.first?.hasPrefix("\(cache) is not a cache of script descriptions (its first line does not name the runtime)") == true)
        #expect(try await start().calls == 0, "written again")

        let foreign = try await start(version: "2.0")
        #expect(foreign.calls == Self.count)
        #expect(foreign.change.warnings.first?.hasPrefix("\(cache) was written by the runtime 1.0 prelude ") == true)

        // An entry is used for its digest alone: one moved to another script's digest is a
        // description of nothing there, and that script runs.
        var lines = try String(contentsOfFile: cache, encoding: .utf8).split(separator: "\n").map(String.init)
        #expect(lines.count == 1 + Self.count)
        lines[1] = "00" + lines[1].dropFirst(2)
        // And one whose description is not JSON: as none, its script runs.
        lines[2] = lines[2].prefix(65) + "{"
        try (lines.joined(separator: "\n") + "\n").write(toFile: cache, atomically: true, encoding: .utf8)
        let moved = try await start(version: "2.0")
        #expect(moved.calls == 2 && moved.change.added.count == Self.count && moved.change.warnings.isEmpty)
        #expect(try await start(version: "2.0").calls == 0, "written again whole")
    }

    @Test func aHelperUnloadedWhileItsStateIsBuiltKeepsNoState() async throws {
        let engine = try LuaEngine(HotspotRuntime.engineConfiguration())
        defer { engine.shutdown() }
        // Its top level sleeps, so the build is still under way when the helper goes.
        let state = HelperState(buildingLaterFrom: ScriptSource(path: "slow.lua", text: "sleep(2)\n" + LazyHelperStatesTests.declared(1)))
        let building = Task { await state.acquire(in: engine) {} }
        try await eventually("the build reached the worker") { engine.requestsInFlight > 0 }
        state.unload(from: engine)
        #expect(engine.requestsInFlight > 0, "unloaded while the build was under way")
        let result = await building.value
        #expect(throws: LuaScriptError.self) { try result.get() }
        #expect(!state.isBuilt)
        #expect(engine.scriptsLoaded == 0, "the worker holds no state for it")
    }
}
