#if canImport(Glibc)
import Glibc
#endif
import FoundationEssentials
public import HotspotCore
import HotspotNetwork
import LinuxFiles

/// Venue credentials for `cmd:secret(name)`, read from a file with one section per helper:
///
///     [aroma]
///     username = guest
///     password = "two words"
///
/// The file must be readable by its owner only (mode 0600 or stricter). Secret values are
/// taken out of every event the runtime reports (`redact`), whoever wrote them there.
public struct Secrets: Sendable, Equatable {
    public private(set) var sections: [String: [String: String]]
    /// Every value, longest first, so a secret containing another is hidden whole.
    private var values: [String]

    public init(_ sections: [String: [String: String]] = [:]) {
        self.sections = sections
        values = Set(sections.values.flatMap(\.values)).filter { !$0.isEmpty }.sorted { $0.count > $1.count }
    }

    public func of(helper: String) -> [String: String] { sections[helper] ?? [:] }

    public func redact(_ text: String) -> String {
        // On the UTF-8 bytes: a secret is found wherever its bytes are, however the text's
        // characters combine around it.
        let hidden = values.reduce(Array(text.utf8)) { $0.replacing(Array($1.utf8), with: Array("[secret]".utf8)) }
        return String(decoding: hidden, as: UTF8.self)
    }

    public func redact(_ event: HotspotEvent) -> HotspotEvent {
        guard !values.isEmpty else { return event }
        return event.mappingText(redact)
    }

    /// Reads and checks the file; every problem names the file, the line and the fix.
    /// Far more than any venue's credentials.
    static let maximumFileSize = BoundedFile.mebibyte

    public static func load(path: String) throws(SecretsError) -> Secrets {
        var status = stat()
        guard stat(path, &status) == 0 else {
            throw SecretsError("\(path): cannot read the secrets file: \(String(cString: strerror(errno)))")
        }
        guard status.st_mode & 0o077 == 0 else {
            throw SecretsError("\(path): the secrets file is readable by others (mode \(String(status.st_mode & 0o777, radix: 8))); "
                               + "run `chmod 600 \(path)`")
        }
        let bytes: [UInt8]
        do {
            bytes = try BoundedFile.read(path, limit: maximumFileSize)
        } catch {
            throw SecretsError("\(path): \(error)")
        }
        guard let text = String(validating: bytes, as: UTF8.self) else {
            throw SecretsError("\(path): cannot read the secrets file as UTF-8 text")
        }
        return try parse(text, path: path)
    }

    static func parse(_ text: String, path: String) throws(SecretsError) -> Secrets {
        var sections: [String: [String: String]] = [:]
        var current: String?
        // By `isNewline`: a file saved with CRLF has "\r\n" characters, which are not "\n".
        for (index, rawLine) in text.split(omittingEmptySubsequences: false, whereSeparator: \.isNewline).enumerated() {
            let line = rawLine.trimmingWhitespace()
            let place = "\(path):\(index + 1)"
            if line.isEmpty || line.hasPrefix("#") || line.hasPrefix(";") { continue }
            if line.hasPrefix("[") {
                guard line.hasSuffix("]"), line.count > 2 else {
                    throw SecretsError("\(place): a section is a helper's name in brackets, such as [aroma]")
                }
                current = line.dropFirst().dropLast().trimmingWhitespace()
                continue
            }
            guard let helper = current else {
                throw SecretsError("\(place): a secret comes after a [helper] section line")
            }
            guard let equals = line.firstIndex(of: "=") else {
                throw SecretsError("\(place): expected `name = value`")
            }
            let name = line[..<equals].trimmingWhitespace()
            var value = line[line.index(after: equals)...].trimmingWhitespace()
            guard !name.isEmpty else { throw SecretsError("\(place): the secret has no name before `=`") }
            if value.count >= 2, value.hasPrefix("\""), value.hasSuffix("\"") { value = String(value.dropFirst().dropLast()) }
            sections[helper, default: [:]][name] = value
        }
        return Secrets(sections)
    }
}

public struct SecretsError: Error, Sendable, CustomStringConvertible {
    public let description: String
    init(_ description: String) { self.description = description }
}
