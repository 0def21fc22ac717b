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
            for (name, value) in FormFields.decode(exchange.url.query ?? "") where SubmittedField.looksLikeToken(value)
                || SubmittedField.tokenNames.contains(where: name.lowercased().contains) {
                add(value, .token)
            }
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
