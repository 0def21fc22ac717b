/// One entry of a script's `hosts`: a host name, an IP address, or `*.` and a domain
/// (any name below that domain, not the domain itself).
public struct HostPattern: Sendable, Hashable, CustomStringConvertible {
    public let text: String
    private let suffix: String?

    /// The pattern, or why it is malformed.
    public static func parse(_ text: String) -> Result<HostPattern, HostPatternError> {
        let lowered = text.lowercased()
        if lowered.hasPrefix("["), lowered.hasSuffix("]") {
            let inner = lowered.dropFirst().dropLast()
            guard !inner.isEmpty, inner.allSatisfy({ $0.isHexDigit || $0 == ":" || $0 == "." }) else {
                return .failure(HostPatternError(pattern: text, reason: "is not an IPv6 address in brackets"))
            }
            return .success(HostPattern(text: lowered, suffix: nil))
        }
        let wildcard = lowered.hasPrefix("*.")
        let name = wildcard ? String(lowered.dropFirst(2)) : lowered
        guard !name.isEmpty, name.count <= 253 else {
            return .failure(HostPatternError(pattern: text, reason: "is empty or longer than 253 characters"))
        }
        for label in name.split(separator: ".", omittingEmptySubsequences: false) {
            guard !label.isEmpty, label.count <= 63 else {
                return .failure(HostPatternError(pattern: text, reason: "has an empty or over-long label"))
            }
            guard label.allSatisfy({ ($0.isASCII && ($0.isLetter || $0.isNumber)) || $0 == "-" }),
                  label.first != "-", label.last != "-" else {
                let hint = label.contains("*") ? " (a wildcard is allowed only as a leading \"*.\")" : ""
                return .failure(HostPatternError(pattern: text, reason: "has a label that is not letters, digits and inner hyphens\(hint)"))
            }
        }
        if wildcard, !name.contains(".") {
            return .failure(HostPatternError(pattern: text, reason: "would match every name under a top-level domain"))
        }
        return .success(HostPattern(text: lowered, suffix: wildcard ? "." + name : nil))
    }

    private init(text: String, suffix: String?) {
        self.text = text
        self.suffix = suffix
    }

    /// One host, not a `*.` pattern.
    public var isExact: Bool { suffix == nil }

    public func matches(_ host: String) -> Bool {
        let host = host.lowercased()
        if let suffix { return host.hasSuffix(suffix) && host.count > suffix.count }
        return host == text
    }

    public var description: String { text }
}

public struct HostPatternError: Error, Sendable, Equatable, CustomStringConvertible {
    public let pattern: String
    public let reason: String
    public var description: String { "host pattern \"\(pattern)\" \(reason)" }
}
