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

    /// Real time is the point: a change is reported within the quiet period (30 ms) after
    /// its last event, so nothing reported over several of them is nothing to report.
    static func quietPeriodsPass() async throws {
        try await Task.sleep(for: .milliseconds(200))
    }

    @Test func reportsSavesRenamesAndDeletionsOfScriptsOnly() async throws {
        let directory = try scratchDirectory("watched")
        let watcher = try ScriptWatcher(path: directory)
        let changes = Changes(watcher)
        Self.save("-- a", to: directory + "/venue.lua")
        try await eventually("the save of venue.lua reported") { changes.value == 1 }
        #expect(changes.value == 1)

        Self.save("not a script", to: directory + "/notes.txt")
        try await Self.quietPeriodsPass()
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
        try await Self.quietPeriodsPass()
        #expect(changes.value == 0, "only the watched file counts")
        Self.saveByRenaming("-- b", to: directory + "/venue.lua")
        try await eventually("the save of the watched file reported") { changes.value == 1 }
        #expect(changes.value == 1)
        watcher.stop()
        await changes.task.value
        #expect(throws: ScriptWatcher.WatchError.self) { try ScriptWatcher(path: directory + "/missing.lua") }
    }

    /// A release deployed by flipping a symlink (`current → v2`) was ignored for good, and
    /// edits to the old, unused directory went on triggering reloads.
    @Test func aSymlinkFlipIsFollowedAndTheOldDirectoryIsLetGo() async throws {
        let release = try scratchDirectory("release")
        for version in ["v1", "v2"] { try FileManager.default.createDirectory(atPath: release + "/" + version, withIntermediateDirectories: false) }
        #expect(symlink("v1", release + "/current") == 0)
        let watcher = try ScriptWatcher(path: release + "/current")
        let changes = Changes(watcher)
        // As `ln -sfn v2 current` does it: a new link renamed over the old one.
        #expect(symlink("v2", release + "/current.new") == 0)
        #expect(rename(release + "/current.new", release + "/current") == 0)
        try await eventually("the flip reported") { changes.value >= 1 }
        let afterFlip = changes.value
        Self.save("-- new", to: release + "/v2/venue.lua")
        try await eventually("a save in the directory the path names now reported") { changes.value > afterFlip }
        // Counted once the new save's burst is over, so only what comes after counts.
        try await Self.quietPeriodsPass()
        let afterSave = changes.value
        Self.save("-- old", to: release + "/v1/venue.lua")
        try await Self.quietPeriodsPass()
        #expect(changes.value == afterSave, "the old directory is no longer the scripts'")
        watcher.stop()
        await changes.task.value
    }

    /// A directory renamed into place, and one removed, are changes (a removed one used to be
    /// noticed only at SIGHUP); the one renamed into place is then watched.
    @Test func aDirectoryRenamedIntoPlaceOrRemovedIsAChange() async throws {
        let parent = try scratchDirectory("deployed")
        let scripts = parent + "/scripts"
        try FileManager.default.createDirectory(atPath: scripts, withIntermediateDirectories: false)
        let watcher = try ScriptWatcher(path: scripts)
        let changes = Changes(watcher)
        try FileManager.default.createDirectory(atPath: parent + "/scripts.new", withIntermediateDirectories: false)
        Self.save("-- staged", to: parent + "/scripts.new/venue.lua")
        try await Self.quietPeriodsPass()
        #expect(changes.value == 0, "a directory being staged is not the scripts'")
        #expect(rename(scripts, parent + "/scripts.old") == 0)
        #expect(rename(parent + "/scripts.new", scripts) == 0)
        try await eventually("the directory renamed into place reported") { changes.value >= 1 }
        let afterRename = changes.value
        Self.save("-- edited", to: scripts + "/venue.lua")
        try await eventually("a save in the new directory reported") { changes.value > afterRename }
        let afterSave = changes.value
        try FileManager.default.removeItem(atPath: scripts)
        try await eventually("the removal reported") { changes.value > afterSave }
        watcher.stop()
        await changes.task.value
    }
}
