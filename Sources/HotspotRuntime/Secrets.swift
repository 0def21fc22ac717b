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

    /// These secrets with `more` values hidden alike (a recording's cookies, tokens, what a
    /// person typed), in every form `redact` finds them.
    public func hiding(_ more: [String]) -> Secrets {
        var copy = self
        copy.values = Set(values + more).filter { !$0.isEmpty }.sorted { $0.count > $1.count }
        return copy
    }

    /// The text with every secret's value replaced by `[secret]`, wherever its bytes are,
    /// however the text's characters combine around it, and in every form the runtime and
    /// the libraries it uses write text: percent-encoded (a URL in `cmd:http`'s failures, any
    /// case of hex), form-encoded (`+` for a space) and JSON-escaped, or a mix of them.
    public func redact(_ text: String) -> String {
        guard !values.isEmpty else { return text }
        let bytes = Array(text.utf8)
        let secrets = values.map { Array($0.utf8) }
        var hidden: [UInt8] = []
        hidden.reserveCapacity(bytes.count)
        var position = 0
        while position < bytes.count {
            // Longest secrets first, so one containing another is hidden whole.
            if let end = secrets.lazy.compactMap({ Self.match($0, in: bytes, at: position) }).first {
                hidden += Array("[secret]".utf8)
                position = end
            } else {
                hidden.append(bytes[position])
                position += 1
            }
        }
        return String(decoding: hidden, as: UTF8.self)
    }

    public func redact(_ event: HotspotEvent) -> HotspotEvent {
        guard !values.isEmpty else { return event }
        return event.mappingText(redact)
    }

    /// The questions with the secrets taken out of everything shown (the title, the message,
    /// labels): `status` and the person's page show them to the control group, who may not
    /// read the secrets file. Names and option values stay: they are what the answers carry.
    public func redact(_ questions: PersonQuestions) -> PersonQuestions {
        guard !values.isEmpty else { return questions }
        var redacted = questions
        redacted.title = redact(questions.title)
        redacted.message = questions.message.map(redact)
        for index in redacted.fields.indices {
            redacted.fields[index].label = redact(redacted.fields[index].label)
            for option in redacted.fields[index].options.indices {
                redacted.fields[index].options[option].label = redact(redacted.fields[index].options[option].label)
            }
        }
        return redacted
    }

    /// Where `secret` ends when it starts at `start` of `text`, each of its bytes there as
    /// itself or encoded; nil when it does not.
    static func match(_ secret: [UInt8], in text: [UInt8], at start: Int) -> Int? {
        var position = start
        var index = 0
        while index < secret.count {
            guard position < text.count else { return nil }
            let byte = secret[index]
            if text[position] == byte {
                position += 1
            } else if text[position] == UInt8(ascii: "%"), position + 2 < text.count,
                      UInt8(String(decoding: text[position + 1...position + 2], as: UTF8.self), radix: 16) == byte {
                position += 3
            } else if byte == UInt8(ascii: " "), text[position] == UInt8(ascii: "+") {
                position += 1
            } else if text[position] == UInt8(ascii: "\\"), position + 1 < text.count,
                      let (consumed, scalarBytes) = jsonEscape(text, at: position),
                      secret[index...].starts(with: scalarBytes) {
                position += consumed
                index += scalarBytes.count
                continue
            } else {
                return nil
            }
            index += 1
        }
        return position
    }

    /// The JSON escape at `position` (a backslash): how many bytes it takes, and the UTF-8
    /// bytes it stands for (a surrogate pair is one character).
    private static func jsonEscape(_ text: [UInt8], at position: Int) -> (Int, [UInt8])? {
        let simple: [UInt8: UInt8] = [UInt8(ascii: "\""): UInt8(ascii: "\""), UInt8(ascii: "\\"): UInt8(ascii: "\\"),
                                      UInt8(ascii: "/"): UInt8(ascii: "/"), UInt8(ascii: "b"): 8, UInt8(ascii: "f"): 12,
                                      UInt8(ascii: "n"): 10, UInt8(ascii: "r"): 13, UInt8(ascii: "t"): 9]
        if let byte = simple[text[position + 1]] { return (2, [byte]) }
        guard let unit = utf16Unit(text, at: position) else { return nil }
        if UTF16.isLeadSurrogate(unit) {
            guard let trail = utf16Unit(text, at: position + 6), UTF16.isTrailSurrogate(trail),
                  let scalar = Unicode.Scalar(0x10000 + (UInt32(unit - 0xD800) << 10) + UInt32(trail - 0xDC00)) else { return nil }
            return (12, Array(String(Character(scalar)).utf8))
        }
        guard let scalar = Unicode.Scalar(unit) else { return nil }
        return (6, Array(String(Character(scalar)).utf8))
    }

    /// The code unit of a `\uXXXX` escape at `position`.
    private static func utf16Unit(_ text: [UInt8], at position: Int) -> UInt16? {
        guard position + 6 <= text.count, text[position] == UInt8(ascii: "\\"), text[position + 1] == UInt8(ascii: "u") else { return nil }
        return UInt16(String(decoding: text[(position + 2)..<(position + 6)], as: UTF8.self), radix: 16)
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
