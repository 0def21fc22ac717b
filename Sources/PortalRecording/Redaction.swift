import JSON

/// What a recording holds that must not leave it: what the person typed, cookies, tokens,
/// and credentials in headers. The import writes none of it (unless told to keep what was
/// typed) and says what it left out; `check(_:)` holds every text it writes to that.
public struct Redaction: Sendable {
    public enum Kind: String, Sendable, CaseIterable, Comparable {
        case typed = "typed by the person"
        case cookie = "cookie"
        case token = "token"
        case credential = "credential in a header"

        /// What one such value is called in a message.
        public var noun: String { self == .typed ? "value typed by the person" : rawValue }

        public static func < (lhs: Kind, rhs: Kind) -> Bool {
            allCases.firstIndex(of: lhs)! < allCases.firstIndex(of: rhs)!
        }
    }

    /// Each value and what it is; values shorter than 4 characters are left out, as they
    /// appear in any text by chance ("yes", "1").
    public private(set) var values: [(value: String, kind: Kind)] = []

    public init(_ login: PortalLogin) {
        for step in login.steps {
            for field in step.fields {
                switch field.role {
                case .typed: add(field.value, .typed)
                case .token: add(field.value, .token)
                default: break
                }
            }
        }
        for exchange in login.exchanges {
            addCookiesAndCredentials(of: exchange)
            for (name, value) in FormFields.decode(exchange.url.query ?? "") where SubmittedField.looksLikeToken(value)
                || Self.isTokenName(name) {
                add(value, .token)
            }
        }
    }

    /// What the exchanges of an attempt the runtime recorded hold that is private, read from
    /// the exchanges alone (no login was found in them): cookies and credentials in headers,
    /// fields sent (in queries, forms and JSON) named like a password, an address, a name or
    /// a token or looking like a token, and every email address anywhere.
    public init(attempt exchanges: [RecordedExchange]) {
        func field(_ name: String, _ value: String) {
            let kind = TypedKind(name: name, type: "text")
            if kind != .text && kind != .number || value.contains("@") {
                add(value, .typed)
            } else if SubmittedField.looksLikeToken(value) || Self.isTokenName(name) {
                add(value, .token)
            }
        }
        func fields(in json: JSONValue) {
            switch json {
            case .object(let members):
                for member in members {
                    if case .string(let value) = member.value {
                        field(String(decoding: member.name, as: UTF8.self), String(decoding: value, as: UTF8.self))
                    } else {
                        fields(in: member.value)
                    }
                }
            case .array(let elements): elements.forEach(fields(in:))
            default: break
            }
        }
        for exchange in exchanges {
            addCookiesAndCredentials(of: exchange)
            for (name, value) in FormFields.decode(exchange.url.query ?? "") { field(name, value) }
            if let body = exchange.requestBody {
                if let json = try? JSONValue.parse(Array(body.utf8), maximumDepth: 32) {
                    fields(in: json)
                } else {
                    for (name, value) in FormFields.decode(body) { field(name, value) }
                }
            }
            let texts = [exchange.url.description, FormFields.unescape(exchange.url.description), exchange.requestBody ?? "",
                         FormFields.unescape(exchange.requestBody ?? ""), exchange.responseText]
                + (exchange.requestHeaders + exchange.responseHeaders).map(\.value)
            for text in texts { Self.emailAddresses(in: text).forEach { add($0, .typed) } }
        }
    }

    private static func isTokenName(_ name: String) -> Bool {
        SubmittedField.tokenNames.contains(where: name.lowercased().contains)
    }

    /// The email addresses in `text`: a local part, `@`, and a domain with a dot.
    static func emailAddresses(in text: String) -> [String] {
        let bytes = Array(text.utf8)
        func isLocal(_ byte: UInt8) -> Bool {
            byte < 0x80 && (Character(Unicode.Scalar(byte)).isLetter || Character(Unicode.Scalar(byte)).isNumber
                || Array("._%+-".utf8).contains(byte))
        }
        func isDomain(_ byte: UInt8) -> Bool {
            byte < 0x80 && (Character(Unicode.Scalar(byte)).isLetter || Character(Unicode.Scalar(byte)).isNumber
                || byte == UInt8(ascii: ".") || byte == UInt8(ascii: "-"))
        }
        var found: [String] = []
        for (index, byte) in bytes.enumerated() where byte == UInt8(ascii: "@") {
            var start = index
            while start > 0, isLocal(bytes[start - 1]) { start -= 1 }
            var end = index + 1
            while end < bytes.count, isDomain(bytes[end]) { end += 1 }
            while end > index + 1, bytes[end - 1] == UInt8(ascii: ".") { end -= 1 }
            let domain = bytes[(index + 1)..<end]
            guard start < index, let dot = domain.lastIndex(of: UInt8(ascii: ".")), dot > domain.startIndex, dot < end - 1 else { continue }
            found.append(String(decoding: bytes[start..<end], as: UTF8.self))
        }
        return found
    }

    private mutating func addCookiesAndCredentials(of exchange: RecordedExchange) {
        for cookie in exchange.setCookies {
            let pair = cookie.split(separator: ";", maxSplits: 1).first ?? ""
            add(pair.split(separator: "=", maxSplits: 1).dropFirst().first.map(String.init) ?? "", .cookie)
        }
        for pair in (exchange.requestHeader("cookie") ?? "").split(separator: ";") {
            add(pair.split(separator: "=", maxSplits: 1).dropFirst().first.map { String($0) } ?? "", .cookie)
        }
        if let authorization = exchange.requestHeader("authorization") {
            add(authorization, .credential)
            authorization.split(separator: " ").dropFirst().forEach { add(String($0), .credential) }
        }
    }

    private mutating func add(_ value: String, _ kind: Kind) {
        let value = value.trimmingSpaces
        guard value.count >= 4, !values.contains(where: { $0.value == value }) else { return }
        values.append((value, kind))
    }

    /// How many values of each kind were left out, for the import's report.
    public var summary: String {
        let counts = Dictionary(grouping: values, by: \.kind).mapValues(\.count)
        guard !counts.isEmpty else { return "nothing to strip" }
        return counts.sorted { $0.key < $1.key }.map { "\($0.key.rawValue): \($0.value)" }.joined(separator: ", ")
    }

    /// The first recorded value (other than those `keeping`) that `text` carries, by kind
    /// only: the value itself is never named.
    public func leak(in text: String, keeping: Set<Kind> = []) -> Kind? {
        values.first { !keeping.contains($0.kind) && text.contains($0.value) }?.kind
    }
}

extension String {
    /// Without the white space at either end.
    public var trimmingSpaces: String {
        String(drop(while: \.isWhitespace).reversed().drop(while: \.isWhitespace).reversed())
    }
}
