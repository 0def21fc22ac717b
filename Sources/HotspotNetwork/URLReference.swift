/// An RFC 3986 URI reference split into its parts.
public struct URLReference: Sendable, Equatable {
    public var scheme: String?
    /// `user:password@host:port`, when there is an authority.
    public var authority: String?
    public var path: String
    public var query: String?
    public var fragment: String?

    public init(_ text: String) {
        var rest = Substring(text)
        if let hash = rest.firstIndex(of: "#") {
            fragment = String(rest[rest.index(after: hash)...])
            rest = rest[..<hash]
        }
        if let mark = rest.firstIndex(of: "?") {
            query = String(rest[rest.index(after: mark)...])
            rest = rest[..<mark]
        }
        if let colon = rest.firstIndex(of: ":"), !rest[..<colon].isEmpty,
           rest[..<colon].allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || "+-.".contains($0)) }),
           rest.first!.isLetter {
            scheme = rest[..<colon].lowercased()
            rest = rest[rest.index(after: colon)...]
        }
        if rest.hasPrefix("//") {
            rest = rest.dropFirst(2)
            let end = rest.firstIndex(of: "/") ?? rest.endIndex
            authority = String(rest[..<end])
            rest = rest[end...]
        }
        path = String(rest)
    }

    public var text: String {
        var out = ""
        if let scheme { out += scheme + ":" }
        if let authority { out += "//" + authority }
        out += path
        if let query { out += "?" + query }
        if let fragment { out += "#" + fragment }
        return out
    }

    /// The authority's parts: user information, host (IPv6 without brackets), port.
    public var hostParts: (user: String?, password: String?, host: String, port: Int?)? {
        guard var rest = authority.map({ Substring($0) }) else { return nil }
        var user: String?, password: String?
        if let at = rest.lastIndex(of: "@") {
            let info = rest[..<at]
            rest = rest[rest.index(after: at)...]
            if let colon = info.firstIndex(of: ":") {
                user = String(info[..<colon])
                password = String(info[info.index(after: colon)...])
            } else {
                user = String(info)
            }
        }
        var host = rest
        var port: Int?
        if rest.hasPrefix("["), let close = rest.firstIndex(of: "]") {
            host = rest[rest.index(after: rest.startIndex)..<close]
            let after = rest[rest.index(after: close)...]
            if after.hasPrefix(":") { port = Int(after.dropFirst()) }
        } else if let colon = rest.lastIndex(of: ":") {
            host = rest[..<colon]
            port = Int(rest[rest.index(after: colon)...])
        }
        return (user, password, host.lowercased(), port)
    }

    /// `reference` resolved against this base (RFC 3986 section 5.2).
    public func resolving(_ reference: URLReference) -> URLReference {
        var target = reference
        if reference.scheme != nil {
            target.path = Self.removingDotSegments(reference.path)
            return target
        }
        target.scheme = scheme
        if reference.authority != nil {
            target.path = Self.removingDotSegments(reference.path)
            return target
        }
        target.authority = authority
        if reference.path.isEmpty {
            target.path = path
            target.query = reference.query ?? query
        } else if reference.path.hasPrefix("/") {
            target.path = Self.removingDotSegments(reference.path)
        } else {
            let merged = authority != nil && path.isEmpty
                ? "/" + reference.path
                : String(path[..<(path.lastIndex(of: "/").map { path.index(after: $0) } ?? path.startIndex)]) + reference.path
            target.path = Self.removingDotSegments(merged)
        }
        return target
    }

    static func removingDotSegments(_ path: String) -> String {
        var input = Substring(path)
        var output: [Substring] = []
        while !input.isEmpty {
            if input.hasPrefix("../") { input = input.dropFirst(3) }
            else if input.hasPrefix("./") { input = input.dropFirst(2) }
            else if input.hasPrefix("/./") { input = input.dropFirst(2) }
            else if input == "/." { input = "/" }
            else if input.hasPrefix("/../") { input = input.dropFirst(3); _ = output.popLast() }
            else if input == "/.." { input = "/"; _ = output.popLast() }
            else if input == "." || input == ".." { input = "" }
            else {
                let start = input.hasPrefix("/") ? input.index(after: input.startIndex) : input.startIndex
                let end = input[start...].firstIndex(of: "/") ?? input.endIndex
                output.append(input[..<end])
                input = input[end...]
            }
        }
        return output.joined()
    }
}
