import FoundationEssentials
public import LuaSandbox
import LinuxFiles

/// The helpers at a script path (a file or a directory of `*.lua`), kept in step with the
/// files: a script whose text changed is loaded again, a new one is added, a deleted one is
/// dropped, and one that no longer loads keeps its last good version running.
///
/// A file of a scripts directory is read again only when its identity changed (device, inode,
/// size, modification and change times: `FileIdentity`), so a reload among ten thousand
/// scripts reads the few that changed. A signed catalog is verified whole at each refresh, as
/// its manifest's signature covers the set: every script it lists is read and digested.
///
/// With a `DescriptionCache`, a declared helper whose script's digest has a description there
/// is loaded from it without running the script.
///
/// A replaced version stays loaded in the engine for `retirementDelay`, so a command that
/// started on it just before the reload still finishes on it.
///
/// With `trust`, the path is a signed catalog (`SignedCatalog`): only the scripts it verifies
/// load, and a new version is taken whole or not at all: one that does not verify, or in
/// which a script is refused or fails to load, leaves the last good version running.
public actor HelperCatalog {
    /// What one `refresh` changed.
    public struct Change: Sendable, Equatable {
        /// Helper ids loaded for the first time, loaded again, and dropped with their file.
        public var added: [String] = []
        public var reloaded: [String] = []
        public var removed: [String] = []
        /// Why scripts did not load; those loaded before keep their last good version.
        public var problems: [ScriptProblem] = []
        /// The signed catalog's version taken, when a new one was.
        public var catalogVersion: String?
        /// What went wrong beside the scripts (the description cache could not be read or written).
        public var warnings: [String] = []

        /// True when the set of helpers changed.
        public var changesHelpers: Bool { !(added.isEmpty && reloaded.isEmpty && removed.isEmpty) }
    }

    private struct Entry {
        /// The text last read from the file, good or not: the same text is not loaded twice.
        var text: String
        /// The last version that loaded, if any did.
        var helper: HelperScript?
        /// The file's identity when `text` was read from it; nil for a signed catalog's script.
        var identity: FileIdentity?
        /// The SHA-256 of `text` and what the prelude described of it, as `DescriptionCache` keeps it.
        var description: (digest: [UInt8], json: [UInt8])?
    }

    public nonisolated let path: String
    private let engine: LuaEngine
    private let retirementDelay: Duration
    private let trust: CatalogTrust?
    private var entries: [String: Entry] = [:]
    private var descriptions: DescriptionCache?
    /// Script files read since the catalog was made (for tests).
    public private(set) var filesRead = 0
    /// The version of the signed catalog running, once one verified.
    public private(set) var catalogVersion: String?

    /// `stateDirectory` and `runtimeVersion`: where to keep the scripts' descriptions
    /// (`DescriptionCache`), with the version of the runtime that wrote them; nil keeps none.
    public init(path: String, engine: LuaEngine, retirementDelay: Duration = .seconds(60), trust: CatalogTrust? = nil,
                stateDirectory: String? = nil, runtimeVersion: String = "") {
        self.path = path
        self.engine = engine
        self.retirementDelay = retirementDelay
        self.trust = trust
        descriptions = stateDirectory.map { DescriptionCache(directory: $0, runtimeVersion: runtimeVersion) }
    }

    /// The helpers that loaded, in file-name order.
    public var helpers: [HelperScript] {
        entries.keys.sorted().compactMap { entries[$0]?.helper }
    }

    /// Reads the path again and loads what changed since the last refresh.
    @discardableResult
    public func refresh() async -> Change {
        var change = Change()
        var scripts: [(path: String, text: String?, entry: SignedCatalog.Entry?)] = []
        var version: String?
        if let trust {
            do throws(CatalogProblem) {
                let verified = try SignedCatalog.verify(directory: path, trust: trust)
                scripts = verified.scripts.map { ($0.path, $0.text, $0.entry) }
                change.problems = verified.refused
                version = verified.version
            } catch {
                change.problems.append(ScriptProblem(location: path, message: error.description + lastGood))
                return change
            }
        } else {
            do {
                scripts = try HelperScript.scriptPaths(at: path).map { ($0, nil, nil) }
            } catch {
                change.problems.append(error)
                return change
            }
        }
        // Staged, so that a signed catalog is taken whole or not at all.
        var staged = entries
        var retiring: [HelperScript] = []
        var loaded: [HelperScript] = []
        for gone in Set(staged.keys).subtracting(scripts.map(\.path)).sorted() {
            if let helper = staged.removeValue(forKey: gone)?.helper {
                change.removed.append(helper.id)
                retiring.append(helper)
            }
        }
        // Read first, then every changed script loaded at once (`loads`): one at a time,
        // ten thousand scripts would wait for ten thousand round trips to the worker.
        var changed: [(path: String, text: String, entry: SignedCatalog.Entry?, identity: FileIdentity?)] = []
        for (scriptPath, verifiedText, entry) in scripts {
            let text: String
            var identity: FileIdentity?
            if let verifiedText {
                text = verifiedText
            } else {
                if let known = staged[scriptPath]?.identity, FileIdentity(path: scriptPath) == known { continue }
                do {
                    let read = try BoundedFile.readWithIdentity(scriptPath, limit: HelperScript.maximumSize)
                    filesRead += 1
                    (text, identity) = (String(decoding: read.bytes, as: UTF8.self), read.identity)
                } catch {
                    change.problems.append(ScriptProblem(location: scriptPath, message: "\(error)"))
                    continue
                }
            }
            if let previous = staged[scriptPath], previous.text == text {
                staged[scriptPath]?.identity = identity  // touched, not changed
                continue
            }
            changed.append((scriptPath, text, entry, identity))
        }
        let results = await loads(changed.map { ($0.path, $0.text) })
        for ((scriptPath, text, entry, identity), (result, description)) in zip(changed, results) {
            let previous = staged[scriptPath]
            switch result {
            case .success(let helper):
                if let entry, let mismatch = SignedCatalog.mismatch(of: helper, with: entry) {
                    helper.state.unload(from: engine)
                    change.problems.append(ScriptProblem(location: scriptPath, message: mismatch))
                    continue
                }
                loaded.append(helper)
                staged[scriptPath] = Entry(text: text, helper: helper, identity: identity,
                                           description: helper.declaredNetworks == nil ? nil : description)
                if let old = previous?.helper {
                    change.reloaded.append(helper.id)
                    retiring.append(old)
                } else {
                    change.added.append(helper.id)
                }
            case .failure(let found):
                staged[scriptPath] = Entry(text: text, helper: previous?.helper, identity: identity, description: previous?.description)
                change.problems += found.problems
            }
        }
        // The running version read again keeps what it has; a new one with a problem is not taken.
        if trust != nil, catalogVersion != nil, version != catalogVersion, !change.problems.isEmpty {
            for helper in loaded { helper.state.unload(from: engine) }
            change.added = []
            change.reloaded = []
            change.removed = []
            change.problems.append(ScriptProblem(location: path, message: "the catalog version \(version ?? "?") is refused" + lastGood))
            return change
        }
        entries = staged
        retiring.forEach(retire)
        change.warnings = descriptions?.takeWarnings() ?? []
        do throws(StateDirectoryError) {
            try descriptions?.keep(entries.values.compactMap(\.description))
        } catch {
            change.warnings.append("the scripts' descriptions could not be kept: \(error); the next start runs the scripts to describe them")
        }
        if let version, version != catalogVersion {
            catalogVersion = version
            change.catalogVersion = version
        }
        return change
    }

    /// How many scripts are loaded at once: enough to keep the worker busy while answers
    /// travel, few enough that the states being described stay a small part of its memory.
    static let concurrentLoads = 32

    typealias Loaded = (result: Result<HelperScript, ScriptProblems>, description: (digest: [UInt8], json: [UInt8])?)

    /// Loads `scripts` (path, text), `concurrentLoads` at a time; the results in their order,
    /// each with its digest and description when the description cache is kept. A declared
    /// script the cache describes is not run.
    private func loads(_ scripts: [(path: String, text: String)]) async -> [Loaded] {
        let engine = engine, cache = descriptions
        return await withTaskGroup(of: (Int, Loaded).self) { group in
            var results = [Loaded?](repeating: nil, count: scripts.count)
            var next = 0
            func start() {
                guard next < scripts.count else { return }
                let index = next, (path, text) = scripts[index]
                next += 1
                group.addTask {
                    guard let cache else { return (index, (await HelperScript.load(path: path, text: text, into: engine), nil)) }
                    let digest = SignedCatalog.sha256(Array(text.utf8))
                    if let (described, json) = cache.description(of: digest),
                       let helper = HelperScript.declared(path: path, text: text, described: described) {
                        return (index, (.success(helper), (digest, json)))
                    }
                    let (result, described) = await HelperScript.loadDescribed(path: path, text: text, into: engine)
                    return (index, (result, described.flatMap(DescriptionCache.encoded).map { (digest, $0) }))
                }
            }
            for _ in 0..<Self.concurrentLoads { start() }
            for await (index, result) in group {
                results[index] = result
                start()
            }
            return results.map { $0! }
        }
    }

    private var lastGood: String {
        catalogVersion.map { "; the catalog version \($0) keeps running" } ?? ""
    }

    private func retire(_ helper: HelperScript) {
        let engine = engine, delay = retirementDelay
        Task {
            try? await Task.sleep(for: delay)
            helper.state.unload(from: engine)
        }
    }
}
