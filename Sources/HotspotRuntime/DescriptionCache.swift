import FoundationEssentials
import JSON
import LinuxFiles
import LuaSandbox

/// What each declared helper's script described when it last ran, by the SHA-256 of the
/// script's bytes, kept in the state directory (`descriptions.jsonl`) so that a start does not
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
    static let fileName = "descriptions.jsonl"
    /// Far beyond the few hundred bytes each of `SignedCatalog.maximumHelpers` descriptions takes.
    static let sizeLimit = 32 * BoundedFile.mebibyte
    /// How deep a description's tables may nest to be kept: a declaration or `ui` goes a few levels down.
    static let maximumTableDepth = 8

    let file: String
    /// The runtime's version and the prelude's SHA-256: what else shapes a description.
    let runtime: String
    /// Each description's JSON, by digest, parsed only when a script with that digest loads:
    /// ten thousand descriptions parsed at once would cost the daemon their trees' memory.
    private var lines: [[UInt8]: [UInt8]] = [:]
    /// The digests the file holds, to write it only when they change.
    private var saved: Set<[UInt8]> = []
    /// Why the file was not used, when it was there and could not be; said once.
    private var warnings: [String] = []

    /// The cache in the state directory at `directory`, read now. The file is a line naming
    /// the runtime (`{"runtime":"..."}`), then one line per description: the digest in
    /// hexadecimal, a space, the description as JSON.
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
        var rest = bytes.split(separator: UInt8(ascii: "\n"))[...]
        guard let header = rest.popFirst(), case .string(let written)? = try? JSONValue.parse(Array(header), maximumDepth: 2)["runtime"] else {
            warnings.append(ignored(because: "its first line does not name the runtime"))
            return
        }
        guard written == Array(runtime.utf8) else {
            warnings.append("\(file) was written by the runtime \(String(decoding: written, as: UTF8.self)), not \(runtime); "
                            + "the scripts are described again")
            return
        }
        var lines: [[UInt8]: [UInt8]] = [:]
        for line in rest {
            guard line.count > 65, line[line.startIndex + 64] == UInt8(ascii: " "),
                  let digest = SignedCatalog.decodedHex(Array(line.prefix(64))), digest.count == 32 else {
                warnings.append(ignored(because: "a line is not a SHA-256 and a description"))
                return
            }
            lines[digest] = Array(line.dropFirst(65))
        }
        self.lines = lines
        saved = Set(lines.keys)
    }

    private func ignored(because reason: String) -> String {
        "\(file) is not a cache of script descriptions (\(reason)); it is ignored and written again"
    }

    mutating func takeWarnings() -> [String] {
        defer { warnings = [] }
        return warnings
    }

    /// The description of the script whose bytes have `digest`, and its JSON, if one is kept
    /// and reads back; an entry that does not is as none, and its script runs.
    func description(of digest: [UInt8]) -> (described: LuaValue, json: [UInt8])? {
        guard let json = lines[digest], let value = try? JSONValue.parse(json, maximumDepth: 2 * Self.maximumTableDepth + 2),
              let described = Self.luaValue(value) else { return nil }
        return (described, json)
    }

    /// `described` as the file holds it; nil for what it cannot hold faithfully.
    static func encoded(_ described: LuaValue) -> [UInt8]? { json(described)?.serialized() }

    /// Keeps exactly `current` (each loaded declared script's digest and encoded description)
    /// and writes the file when that changed; the error says why it could not be written.
    mutating func keep(_ current: [(digest: [UInt8], json: [UInt8])]) throws(StateDirectoryError) {
        lines = Dictionary(current.map { ($0.digest, $0.json) }, uniquingKeysWith: { first, _ in first })
        guard Set(lines.keys) != saved else { return }
        var bytes = JSONValue(members: [("runtime", .string(Array(runtime.utf8)))]).serialized()
        for (digest, json) in lines {
            bytes.append(UInt8(ascii: "\n"))
            bytes += SignedCatalog.hex(digest).utf8
            bytes.append(UInt8(ascii: " "))
            bytes += json
        }
        bytes.append(UInt8(ascii: "\n"))
        try StateDirectory.writeAtomically(Data(bytes), to: file)
        saved = Set(lines.keys)
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
