import FoundationEssentials
public import LuaSandbox
import LinuxFiles

/// The helpers at a script path (a file or a directory of `*.lua`), kept in step with the
/// files: a script whose text changed is loaded again, a new one is added, a deleted one is
/// dropped, and one that no longer loads keeps its last good version running.
///
/// A replaced version stays loaded in the engine for `retirementDelay`, so a command that
/// started on it just before the reload still finishes on it.
public actor HelperCatalog {
    /// What one `refresh` changed.
    public struct Change: Sendable, Equatable {
        /// Helper ids loaded for the first time, loaded again, and dropped with their file.
        public var added: [String] = []
        public var reloaded: [String] = []
        public var removed: [String] = []
        /// Why scripts did not load; those loaded before keep their last good version.
        public var problems: [ScriptProblem] = []

        /// True when the set of helpers changed.
        public var changesHelpers: Bool { !(added.isEmpty && reloaded.isEmpty && removed.isEmpty) }
    }

    private struct Entry {
        /// The text last read from the file, good or not: the same text is not loaded twice.
        var text: String
        /// The last version that loaded, if any did.
        var helper: HelperScript?
    }

    public nonisolated let path: String
    private let engine: LuaEngine
    private let retirementDelay: Duration
    private var entries: [String: Entry] = [:]

    public init(path: String, engine: LuaEngine, retirementDelay: Duration = .seconds(60)) {
        self.path = path
        self.engine = engine
        self.retirementDelay = retirementDelay
    }

    /// The helpers that loaded, in file-name order.
    public var helpers: [HelperScript] {
        entries.keys.sorted().compactMap { entries[$0]?.helper }
    }

    /// Reads the path again and loads what changed since the last refresh.
    @discardableResult
    public func refresh() async -> Change {
        var change = Change()
        let paths: [String]
        do {
            paths = try HelperScript.scriptPaths(at: path)
        } catch {
            change.problems.append(error)
            return change
        }
        for gone in Set(entries.keys).subtracting(paths).sorted() {
            if let helper = entries.removeValue(forKey: gone)?.helper {
                change.removed.append(helper.id)
                retire(helper)
            }
        }
        for scriptPath in paths {
            let text: String
            do {
                text = String(decoding: try BoundedFile.read(scriptPath, limit: HelperScript.maximumSize), as: UTF8.self)
            } catch {
                change.problems.append(ScriptProblem(location: scriptPath, message: "\(error)"))
                continue
            }
            let previous = entries[scriptPath]
            if let previous, previous.text == text {
                continue
            }
            switch await HelperScript.load(path: scriptPath, text: text, into: engine) {
            case .success(let helper):
                entries[scriptPath] = Entry(text: text, helper: helper)
                if let old = previous?.helper {
                    change.reloaded.append(helper.id)
                    retire(old)
                } else {
                    change.added.append(helper.id)
                }
            case .failure(let found):
                entries[scriptPath] = Entry(text: text, helper: previous?.helper)
                change.problems += found.problems
            }
        }
        return change
    }

    private func retire(_ helper: HelperScript) {
        let engine = engine, delay = retirementDelay
        Task {
            try? await Task.sleep(for: delay)
            engine.unload(helper.handle)
        }
    }
}
