import FoundationEssentials
#if canImport(Glibc)
import Glibc
#endif
import COpenSSLCrypto
import JSON
import LinuxFiles
public import HotspotCore
import LuaSandbox

/// A signed catalog of helpers (docs/OPERATIONS.md, "Shipping a catalog"): a directory with
/// `manifest.json`, its minisign signature `manifest.json.minisig`, and the scripts it lists.
///
/// minisign: Ed25519 signatures in a format Debian ships the tool for (`minisign`, and
/// signify-compatible keys), which fleets already use for release files; verified here with
/// libcrypto, which the runtime already opens, so verifying needs no new library.
///
/// Everything is read from the directory's real path, resolved once: a catalog replaced by
/// an atomic swap while it is read is read whole from one version or the other. Every file
/// has a size limit checked before it is read, and the signature is checked before the
/// manifest is parsed, so no unsigned input is parsed at all.
public enum SignedCatalog {
    public static let manifestName = "manifest.json"
    public static let signatureName = "manifest.json.minisig"
    /// A manifest of 20,000 helpers with declarations is about 5 MiB.
    public static let maximumManifestSize = 16 * BoundedFile.mebibyte
    public static let maximumHelpers = 20_000
    /// What a catalog's scripts may come to together: the runtime keeps each helper's text,
    /// and 10,000 venue scripts of a few KiB are a third of it. With the manifest's and each
    /// script's own limits, this bounds what reading a catalog holds.
    public static let maximumScriptsSize = 128 * BoundedFile.mebibyte
    static let maximumSignatureSize = 4096

    /// One helper as the manifest lists it.
    public struct Entry: Sendable, Equatable {
        public let name: String
        public let version: String
        public let sha256: [UInt8]
        public let hosts: [String]
        public let declaredNetworks: NetworkDeclaration?
    }

    /// What verified: the catalog's version, the key that signed it, the scripts whose digests
    /// match (read, with the manifest's entry), and why the others were refused.
    public struct Verified: Sendable {
        public let version: String
        public let keyID: String
        public let scripts: [(path: String, text: String, entry: Entry)]
        public let refused: [ScriptProblem]
    }

    /// Verifies the catalog at `directory` against the keys in `trust`. Throws when the catalog
    /// as a whole cannot be trusted (no valid signature by a trusted key, a manifest that is
    /// not valid); a script that does not match its digest is refused alone.
    public static func verify(directory: String, trust: CatalogTrust) throws(CatalogProblem) -> Verified {
        guard let resolved = realpath(directory, nil) else {
            throw CatalogProblem("\(directory): cannot read the catalog: \(String(cString: strerror(errno)))")
        }
        let real = String(cString: resolved)
        free(resolved)
        func read(_ name: String, limit: Int) throws(CatalogProblem) -> [UInt8] {
            do {
                return try BoundedFile.read(real.pathAppending(component: name), limit: limit)
            } catch {
                throw CatalogProblem("\(directory)/\(name): \(error)")
            }
        }
        let manifestBytes = try read(manifestName, limit: maximumManifestSize)
        let signature = try MinisignSignature(parsing: try read(signatureName, limit: maximumSignatureSize), in: "\(directory)/\(signatureName)")
        let keyID = try trust.verify(signature, of: manifestBytes, manifest: "\(directory)/\(manifestName)")
        let (version, entries) = try parseManifest(manifestBytes, at: "\(directory)/\(manifestName)")

        // Sizes first, so that a catalog over the bound is refused before any script is read.
        var scriptsSize = 0
        for entry in entries {
            var status = stat()
            if lstat(real.pathAppending(component: "\(entry.name).lua"), &status) == 0, status.st_mode & S_IFMT == S_IFREG {
                scriptsSize += min(Int(status.st_size), HelperScript.maximumSize + 1)
            }
        }
        guard scriptsSize <= maximumScriptsSize else {
            throw CatalogProblem("\(directory): its scripts come to more than \(maximumScriptsSize / BoundedFile.mebibyte) MiB, "
                                 + "the most a catalog may hold; split it, or make its scripts smaller")
        }
        var scripts: [(path: String, text: String, entry: Entry)] = []
        var refused: [ScriptProblem] = []
        for entry in entries {
            let file = "\(entry.name).lua"
            let shown = directory.pathAppending(component: file)
            var status = stat()
            guard lstat(real.pathAppending(component: file), &status) == 0 else {
                refused.append(ScriptProblem(location: shown, message: "listed in the manifest, but \(String(cString: strerror(errno)))"))
                continue
            }
            guard status.st_mode & S_IFMT != S_IFLNK else {
                refused.append(ScriptProblem(location: shown, message: "a symbolic link; a catalog holds its scripts itself"))
                continue
            }
            let bytes: [UInt8]
            do {
                bytes = try BoundedFile.read(real.pathAppending(component: file), limit: HelperScript.maximumSize)
            } catch {
                refused.append(ScriptProblem(location: shown, message: "\(error)"))
                continue
            }
            let digest = sha256(bytes)
            guard digest == entry.sha256 else {
                refused.append(ScriptProblem(location: shown, message: "its SHA-256 is \(hex(digest)), the signed manifest says \(hex(entry.sha256)); "
                                             + "refused"))
                continue
            }
            scripts.append((shown, String(decoding: bytes, as: UTF8.self), entry))
        }
        let listed = Set(entries.map { "\($0.name).lua" })
        let present = (try? FileManager.default.contentsOfDirectory(atPath: real)) ?? []
        for stray in present.filter({ $0.hasSuffix(".lua") && !listed.contains($0) }).sorted() {
            refused.append(ScriptProblem(location: directory.pathAppending(component: stray), message: "not in the signed manifest; refused"))
        }
        return Verified(version: version, keyID: keyID, scripts: scripts, refused: refused)
    }

    /// Whether the loaded script says what the signed manifest says of it: the manifest is
    /// what a device may read of a helper without running it.
    static func mismatch(of helper: HelperScript, with entry: Entry) -> String? {
        let hosts = helper.hosts.map(\.text) + (helper.followsPortal ? [HelperScript.portalHosts] : [])
        if Set(hosts) != Set(entry.hosts) {
            return "the script's hosts are \(hosts.sorted()), the manifest's \(entry.hosts.sorted()); refused"
        }
        if helper.declaredNetworks != entry.declaredNetworks {
            return "the script's `networks` differ from the manifest's; refused"
        }
        return nil
    }

    static func parseManifest(_ bytes: [UInt8], at place: String) throws(CatalogProblem) -> (String, [Entry]) {
        func problem(_ message: String) -> CatalogProblem { CatalogProblem("\(place): \(message)") }
        let document: JSONValue
        do {
            document = try JSONValue.parse(bytes, maximumDepth: 8)
        } catch {
            throw problem("not JSON: \(error)")
        }
        guard case .string(let versionBytes)? = document["version"], !versionBytes.isEmpty, versionBytes.count <= 64 else {
            throw problem("no \"version\" string of 1 to 64 bytes")
        }
        guard case .array(let list)? = document["helpers"] else { throw problem("no \"helpers\" array") }
        guard list.count <= maximumHelpers else {
            throw problem("lists \(list.count) helpers; a catalog holds at most \(maximumHelpers)")
        }
        var entries: [Entry] = []
        var names = Set<String>()
        for (index, item) in list.enumerated() {
            let at = "helper \(index + 1)"
            guard case .string(let nameBytes)? = item["name"], let name = String(validating: nameBytes, as: UTF8.self),
                  isHelperName(name) else {
                throw problem("\(at) has no \"name\" of 1 to 64 letters, digits, `-`, `_` and `.`, not starting with `.`")
            }
            guard names.insert(name).inserted else { throw problem("lists the helper \(name) twice") }
            guard case .string(let version)? = item["version"], !version.isEmpty, version.count <= 64 else {
                throw problem("\(name) has no \"version\" string of 1 to 64 bytes")
            }
            guard case .string(let digestText)? = item["sha256"], let digest = decodedHex(digestText), digest.count == 32 else {
                throw problem("\(name) has no \"sha256\" of 64 hexadecimal digits")
            }
            var hosts: [String] = []
            if case .array(let values)? = item["hosts"] {
                for value in values {
                    guard case .string(let host) = value else { throw problem("\(name)'s \"hosts\" must be strings") }
                    hosts.append(String(decoding: host, as: UTF8.self))
                }
            } else {
                throw problem("\(name) has no \"hosts\" array")
            }
            var declared: NetworkDeclaration?
            if let networks = item["networks"], networks != .null {
                do throws(NetworkDeclaration.ReadingProblem) {
                    declared = try NetworkDeclaration(lua: luaValue(networks))
                } catch {
                    throw problem("\(name): \(error)")
                }
            }
            entries.append(Entry(name: name, version: String(decoding: version, as: UTF8.self), sha256: digest, hosts: hosts,
                                 declaredNetworks: declared))
        }
        return (String(decoding: versionBytes, as: UTF8.self), entries)
    }

    /// A manifest's `networks`, as the script's reader takes them (objects, arrays, strings).
    private static func luaValue(_ value: JSONValue) -> LuaValue {
        switch value {
        case .string(let bytes): .text(String(decoding: bytes, as: UTF8.self))
        case .array(let items): .table(LuaTable(array: items.map(luaValue)))
        case .object(let members):
            .table(LuaTable(Dictionary(members.map { (LuaValue.text(String(decoding: $0.name, as: UTF8.self)), luaValue($0.value)) },
                                       uniquingKeysWith: { $1 })))
        case .integer(let number): .integer(number)
        case .number(let number): .number(number)
        case .boolean(let flag): .boolean(flag)
        case .null: .nil
        }
    }

    static func isHelperName(_ name: String) -> Bool {
        (1...64).contains(name.utf8.count) && !name.hasPrefix(".")
            && name.utf8.allSatisfy { $0 == UInt8(ascii: "-") || $0 == UInt8(ascii: "_") || $0 == UInt8(ascii: ".")
                || (UInt8(ascii: "a")...UInt8(ascii: "z")).contains($0 | 0x20) || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) }
    }

    static func sha256(_ bytes: [UInt8]) -> [UInt8] { digest(hh_digest_sha256, bytes) }

    static func digest(_ algorithm: hh_digest, _ bytes: [UInt8]) -> [UInt8] {
        var output = [UInt8](repeating: 0, count: Int(EVP_MAX_MD_SIZE))
        var size: UInt32 = 0
        precondition(hh_crypto_load() == nil && hh_crypto_digest(algorithm, bytes, bytes.count, &output, &size) == 1, "libcrypto's digest failed")
        return Array(output[..<Int(size)])
    }

    static func hex(_ bytes: [UInt8]) -> String {
        bytes.map { ($0 < 16 ? "0" : "") + String($0, radix: 16) }.joined()
    }

    static func decodedHex(_ text: [UInt8]) -> [UInt8]? {
        guard text.count % 2 == 0 else { return nil }
        var bytes: [UInt8] = []
        var index = 0
        while index < text.count {
            guard let byte = UInt8(String(decoding: text[index..<index + 2], as: UTF8.self), radix: 16) else { return nil }
            bytes.append(byte)
            index += 2
        }
        return bytes
    }
}

/// Why a catalog as a whole was refused; the last good catalog keeps running.
public struct CatalogProblem: Error, Sendable, Equatable, CustomStringConvertible {
    public let description: String
    init(_ description: String) { self.description = description }
}

/// The minisign public keys an operator trusts to sign catalogs (`run --trust FILE`): one or
/// more keys as `minisign -G` writes them, each an `untrusted comment:` line and its base64.
public struct CatalogTrust: Sendable {
    struct Key: Sendable {
        let id: [UInt8]
        let key: [UInt8]
    }

    let keys: [Key]

    public static func load(path: String) throws(CatalogProblem) -> CatalogTrust {
        let bytes: [UInt8]
        do {
            bytes = try BoundedFile.read(path, limit: 64 << 10)
        } catch {
            throw CatalogProblem("\(path): \(error)")
        }
        return try parse(String(decoding: bytes, as: UTF8.self), path: path)
    }

    static func parse(_ text: String, path: String) throws(CatalogProblem) -> CatalogTrust {
        var keys: [Key] = []
        for (index, line) in text.split(whereSeparator: \.isNewline).enumerated() {
            let trimmed = line.trimmingWhitespace()
            if trimmed.isEmpty || trimmed.hasPrefix("untrusted comment:") || trimmed.hasPrefix("#") { continue }
            guard let decoded = Data(base64Encoded: String(trimmed)).map(Array.init), decoded.count == 42,
                  decoded[0] == UInt8(ascii: "E"), decoded[1] == UInt8(ascii: "d") else {
                throw CatalogProblem("\(path):\(index + 1): not a minisign public key (the line after `untrusted comment:` that `minisign -G` writes)")
            }
            keys.append(Key(id: Array(decoded[2..<10]), key: Array(decoded[10...])))
        }
        guard !keys.isEmpty else { throw CatalogProblem("\(path): no minisign public key") }
        return CatalogTrust(keys: keys)
    }

    /// minisign prints a key's id as its 8 bytes reversed, in hex.
    static func displayed(_ id: [UInt8]) -> String { SignedCatalog.hex(id.reversed()).uppercased() }

    /// The signing key's id when `signature` is a valid one of `manifest` by a trusted key.
    func verify(_ signature: MinisignSignature, of manifest: [UInt8], manifest place: String) throws(CatalogProblem) -> String {
        let shown = Self.displayed(signature.keyID)
        guard let key = keys.first(where: { $0.id == signature.keyID }) else {
            throw CatalogProblem("\(place): signed with the key \(shown), which the trusted keys do not hold (\(keys.map { Self.displayed($0.id) }.joined(separator: ", ")))")
        }
        if let failure = hh_crypto_load() {
            throw CatalogProblem("\(place): cannot verify the signature: cannot use libcrypto: \(String(cString: failure))")
        }
        // minisign's default signs the BLAKE2b-512 digest of the file ("ED"); "Ed" the file itself.
        let message = signature.isPrehashed ? SignedCatalog.digest(hh_digest_blake2b512, manifest) : manifest
        guard Self.ed25519(key.key, signature.signature, message) else {
            throw CatalogProblem("\(place): the signature by \(shown) does not match the manifest; refused")
        }
        guard Self.ed25519(key.key, signature.globalSignature, signature.signature + Array(signature.trustedComment.utf8)) else {
            throw CatalogProblem("\(place): the signature's trusted comment was altered; refused")
        }
        return shown
    }

    private static func ed25519(_ key: [UInt8], _ signature: [UInt8], _ message: [UInt8]) -> Bool {
        hh_crypto_ed25519_verify(key, signature, message, message.count) == 1
    }
}

/// A `.minisig` file: an untrusted comment, the signature, the trusted comment and the
/// signature over the signature and the trusted comment.
struct MinisignSignature {
    let isPrehashed: Bool
    let keyID: [UInt8]
    let signature: [UInt8]
    let trustedComment: String
    let globalSignature: [UInt8]

    init(parsing bytes: [UInt8], in place: String) throws(CatalogProblem) {
        let lines = String(decoding: bytes, as: UTF8.self).split(whereSeparator: \.isNewline).map { String($0) }
        let trustedPrefix = "trusted comment: "
        guard lines.count >= 4, lines[0].hasPrefix("untrusted comment:"), lines[2].hasPrefix(trustedPrefix),
              let signature = Data(base64Encoded: lines[1]).map(Array.init), signature.count == 74,
              signature[0] == UInt8(ascii: "E"), signature[1] == UInt8(ascii: "d") || signature[1] == UInt8(ascii: "D"),
              let global = Data(base64Encoded: lines[3]).map(Array.init), global.count == 64 else {
            throw CatalogProblem("\(place): not a minisign signature (as `minisign -S -m manifest.json` writes)")
        }
        isPrehashed = signature[1] == UInt8(ascii: "D")
        keyID = Array(signature[2..<10])
        self.signature = Array(signature[10...])
        trustedComment = String(lines[2].dropFirst(trustedPrefix.count))
        globalSignature = global
    }
}
