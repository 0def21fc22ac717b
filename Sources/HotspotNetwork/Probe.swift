#if canImport(Glibc)
import Glibc
#endif
public import HotspotCore

/// Reading and checking the compact syntax of `Probe` (HotspotCore), and judging a response.
extension Probe {
    /// Whether the probe goes over TLS: a set whose HTTPS probes all fail while HTTP ones
    /// pass is `partial`.
    public var isHTTPS: Bool { URLReference(url).scheme == "https" }

    /// Longest regular expression accepted; with no back-references, matching time stays bounded.
    static let largestPattern = 512

    /// Reads the compact syntax, or says what is wrong with it.
    public static func parse(_ spec: String) -> Result<Probe, ProbeSpecError> {
        var rest = Substring(spec).drop { $0 == " " || $0 == "\t" }
        func nextWord() -> Substring {
            let word = rest.prefix { $0 != " " && $0 != "\t" }
            rest = rest.dropFirst(word.count).drop { $0 == " " || $0 == "\t" }
            return word
        }
        var word = nextWord()
        var method = "GET"
        if !word.isEmpty, word.allSatisfy({ $0.isASCII && $0.isUppercase }) {
            method = String(word)
            word = nextWord()
        }
        let url = String(word)
        let target = URLReference(url)
        guard target.scheme == "http" || target.scheme == "https", let host = target.hostParts?.host, !host.isEmpty else {
            return .failure(ProbeSpecError(spec, "'\(url)' is not an http:// or https:// URL with a host"))
        }
        var headers: [Header] = []
        while rest.hasPrefix("+") {
            let field = nextWord().dropFirst()
            guard let colon = field.firstIndex(of: ":"), colon != field.startIndex,
                  field[..<colon].allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "-") }) else {
                return .failure(ProbeSpecError(spec, "a request header is written +Name:value, not '+\(field)'"))
            }
            headers.append(Header(name: String(field[..<colon]), value: String(field[field.index(after: colon)...])))
        }
        guard !rest.isEmpty else {
            var probe = Probe(url: url)
            probe.method = method
            probe.headers = headers
            return .success(probe)
        }
        guard let equals = rest.firstIndex(of: "=") else {
            return .failure(ProbeSpecError(spec, "'\(rest)' is not an expectation: use status=, contains=, equals=, matches= or header="))
        }
        let (keyword, value) = (String(rest[..<equals]), String(rest[rest.index(after: equals)...]))
        let expectation: Expectation
        switch keyword {
        case "status":
            guard let code = Int(value), (100...599).contains(code) else {
                return .failure(ProbeSpecError(spec, "status=\(value) is not an HTTP status from 100 to 599"))
            }
            expectation = .status(code)
        case "contains", "equals":
            guard !value.isEmpty else { return .failure(ProbeSpecError(spec, "\(keyword)= needs a text")) }
            expectation = keyword == "contains" ? .bodyContains(value) : .bodyEquals(value)
        case "matches":
            if let problem = RegularExpression.problem(with: value) { return .failure(ProbeSpecError(spec, "matches=\(value): \(problem)")) }
            expectation = .bodyMatches(value)
        case "header":
            guard let colon = value.firstIndex(of: ":"), colon != value.startIndex else {
                return .failure(ProbeSpecError(spec, "header= is written header=Name:value"))
            }
            expectation = .header(name: String(value[..<colon]), value: String(value[value.index(after: colon)...]))
        default:
            return .failure(ProbeSpecError(spec, "'\(keyword)=' is not an expectation: use status=, contains=, equals=, matches= or header="))
        }
        return .success(Probe(url: url, method: method, headers: headers, expectation: expectation))
    }

    /// Whether `response` is what an open Internet answers.
    func isMet(by response: HTTPResponse) -> Bool {
        let text = { String(decoding: response.body, as: UTF8.self) }
        switch expectation {
        case .status(let status):
            return response.status == status
        case .bodyContains(let expected):
            return response.status == 200 && text().lowercased().contains(expected.lowercased())
        case .bodyEquals(let expected):
            return response.status == 200 && text().trimmingWhitespace() == expected.trimmingWhitespace()
        case .bodyMatches(let pattern):
            return response.status == 200 && RegularExpression.matches(pattern, text())
        case .header(let name, let value):
            return (200..<300).contains(response.status)
                && response.header(name.lowercased())?.lowercased() == value.trimmingWhitespace().lowercased()
        }
    }
}

/// A probe line that does not parse, and why.
public struct ProbeSpecError: Error, Sendable, Equatable, CustomStringConvertible {
    public let spec: String
    public let problem: String

    init(_ spec: String, _ problem: String) {
        self.spec = spec
        self.problem = problem
    }

    public var description: String { "probe '\(spec)': \(problem)" }
}

/// POSIX extended regular expressions (glibc's regcomp/regexec), `^` and `$` at every line,
/// without back-references so that matching stays bounded.
enum RegularExpression {
    static func problem(with pattern: String) -> String? {
        guard pattern.utf8.count <= Probe.largestPattern else { return "longer than \(Probe.largestPattern) bytes" }
        var characters = pattern.makeIterator()
        while let character = characters.next() {
            if character == "\\", let escaped = characters.next(), ("1"..."9").contains(escaped) {
                return "back-references are not allowed"
            }
        }
        var compiled = regex_t()
        let code = regcomp(&compiled, pattern, REG_EXTENDED | REG_NOSUB | REG_NEWLINE)
        defer { if code == 0 { regfree(&compiled) } }
        guard code != 0 else { return nil }
        var message = [CChar](repeating: 0, count: 256)
        regerror(code, &compiled, &message, message.count)
        return String(decoding: message.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    static func matches(_ pattern: String, _ text: String) -> Bool {
        var compiled = regex_t()
        guard regcomp(&compiled, pattern, REG_EXTENDED | REG_NOSUB | REG_NEWLINE) == 0 else { return false }
        defer { regfree(&compiled) }
        return regexec(&compiled, text, 0, nil, 0) == 0
    }
}
