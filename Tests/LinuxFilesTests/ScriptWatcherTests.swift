import Foundation
import Locking
import Testing
import TestSupport
@testable import LinuxFiles

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
            let count = PlainLock(0)
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
        let directory = try scratchDirectory("watched")
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
        let directory = try scratchDirectory("watched")
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
