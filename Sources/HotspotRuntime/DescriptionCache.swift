import FoundationEssentials
import JSON
import LinuxFiles
import LuaSandbox

/// What each declared helper's script described when it last ran, by the SHA-256 of the
/// script's bytes, kept in the state directory (`descriptions.json`) so that a start does not
/// run ten thousand scripts again to read their declarations (docs/OPERATIONS.md, "Thousands
/// of venues on one device").
///
/// Kept as the prelude's description, not the helper made of it: the contract's check runs on
/// it again at every use, so a runtime whose check changed judges it anew. The file names the
/// runtime's version and the prelude's digest, and one written by another is not used: a new
/// prelude may describe a script otherwise. An entry is only ever used for a script whose
/// bytes have its digest. A file that cannot be read as a cache is ignored with a warning and
/// written again; it is the state directory's, with the same trust as `state.json`.
struct DescriptionCache {
    static let fileName = "descriptions.json"
    /// Far beyond the few hundred bytes each of `SignedCatalog.maximumHelpers` descriptions takes.
    static let sizeLimit = 32 * BoundedFile.mebibyte
    /// How deep a description's tables may nest to be kept: a declaration or `ui` goes a few levels down.
    static let maximumTableDepth = 8

    let file: String
    /// The runtime's version and the prelude's SHA-256: what else shapes a description.
    let runtime: String
    private var descriptions: [[UInt8]: LuaValue] = [:]
    /// The digests the file holds, to write it only when they change.
    private var saved: Set<[UInt8]> = []
    /// Why the file was not used, when it was there and could not be; said once.
    private var warnings: [String] = []

    /// The cache in the state directory at `directory`, read now.
    init(directory: String, runtimeVersion: String) {
        file = directory.pathAppending(component: Self.fileName)
        runtime = runtimeVersion + " prelude " + SignedCatalog.hex(SignedCatalog.sha256(HelperPrelude.source.text))
        let bytes: [UInt8]
        do {
            bytes = try BoundedFile.read(file, limit: Self.sizeLimit)
        } catch .unreadable {
            return  // none yet
        } catch {
            warnings.append(ignored(because: error.description))
            return
        }
        do throws(Unreadable) {
            descriptions = try Self.parse(bytes, runtime: runtime)
            saved = Set(descriptions.keys)
        } catch {
            switch error {
            case .otherRuntime(let other):
                warnings.append("\(file) was written by the runtime \(other), not \(runtime); the scripts are described again")
            case .malformed(let reason):
                warnings.append(ignored(because: reason))
            }
        }
    }

    mutating func takeWarnings() -> [String] {
        defer { warnings = [] }
        return warnings
    }

    private func ignored(because reason: String) -> String {
        "\(file) is not a cache of script descriptions (\(reason)); it is ignored and written again"
    }

    /// The description of the script whose bytes have `digest`, if one is kept.
    func description(of digest: [UInt8]) -> LuaValue? { descriptions[digest] }

    /// Keeps exactly `current` (each loaded declared script's digest and description) and
    /// writes the file when that changed; the error says why it could not be written.
    mutating func keep(_ current: [(digest: [UInt8], described: LuaValue)]) throws(StateDirectoryError) {
        var kept: [[UInt8]: (described: LuaValue, json: JSONValue)] = [:]
        for (digest, described) in current {
            if let json = Self.json(described) { kept[digest] = (described, json) }
        }
        descriptions = kept.mapValues(\.described)
        guard Set(kept.keys) != saved else { return }
        let document = JSONValue(members: [
            ("runtime", .string(Array(runtime.utf8))),
            ("descriptions", .object(kept.map { (Array(SignedCatalog.hex($0.key).utf8), $0.value.json) })),
        ])
        try StateDirectory.writeAtomically(Data(document.serialized()), to: file)
        saved = Set(kept.keys)
    }

    // MARK: the file

    private enum Unreadable: Error {
        case otherRuntime(String)
        case malformed(String)
    }

    private static func parse(_ bytes: [UInt8], runtime: String) throws(Unreadable) -> [[UInt8]: LuaValue] {
        let document: JSONValue
        do {
            document = try JSONValue.parse(bytes, maximumDepth: 2 * maximumTableDepth + 4)
        } catch {
            throw .malformed("not JSON: \(error)")
        }
        guard case .string(let written)? = document["runtime"] else { throw .malformed("no \"runtime\"") }
        guard written == Array(runtime.utf8) else { throw .otherRuntime(String(decoding: written, as: UTF8.self)) }
        guard case .object(let members)? = document["descriptions"] else { throw .malformed("no \"descriptions\" object") }
        var descriptions: [[UInt8]: LuaValue] = [:]
        for (name, value) in members {
            guard let digest = SignedCatalog.decodedHex(name), digest.count == 32, let described = luaValue(value) else {
                throw .malformed("an entry is not a SHA-256 and a description")
            }
            descriptions[digest] = described
        }
        return descriptions
    }

    /// A Lua value as JSON: a table as an array of its [key, value] pairs, so that any key and
    /// `nil`'s absence survive. Nil for what the file cannot hold faithfully (a string that is
    /// not UTF-8, a number that is not finite, a host object, tables nested too deep).
    private static func json(_ value: LuaValue, depth: Int = 0) -> JSONValue? {
        switch value {
        case .nil: return .null
        case .boolean(let flag): return .boolean(flag)
        case .integer(let number): return .integer(number)
        case .number(let number): return number.isFinite ? .number(number) : nil
        case .string(let bytes): return String(validating: bytes, as: UTF8.self) == nil ? nil : .string(bytes)
        case .table(let table):
            guard depth < maximumTableDepth else { return nil }
            var pairs: [JSONValue] = []
            for (key, item) in table.entries {
                guard let key = json(key, depth: depth + 1), let item = json(item, depth: depth + 1) else { return nil }
                pairs.append(.array([key, item]))
            }
            return .array(pairs)
        case .object: return nil
        }
    }

    private static func luaValue(_ value: JSONValue) -> LuaValue? {
        switch value {
        case .null: return .nil
        case .boolean(let flag): return .boolean(flag)
        case .integer(let number): return .integer(number)
        case .number(let number): return .number(number)
        case .string(let bytes): return .string(bytes)
        case .array(let pairs):
            var entries: [LuaValue: LuaValue] = [:]
            for pair in pairs {
                guard case .array(let both) = pair, both.count == 2, let key = luaValue(both[0]), !key.isNil,
                      let item = luaValue(both[1]) else { return nil }
                entries[key] = item
            }
            return .table(LuaTable(entries))
        case .object: return nil
        }
    }
}
