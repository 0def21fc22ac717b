public import LuaSandbox

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

/// `url.encode`, `url.decode`, `url.parse`, `url.resolve(base, ref)`, `url.query(table)`.
public enum URLLibrary {
    private static let unreserved = Set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_.~".utf8)

    public static let module = HostModule("url", functions: [
        ("encode", { call in [.string(percentEncode(try call.bytes(0)))] }),
        ("decode", { call in [.string(percentDecode(try call.bytes(0)))] }),
        ("parse", { (call: borrowing HostCall) throws -> [LuaValue] in
            let reference = URLReference(try call.string(0))
            var table = LuaTable()
            table["scheme"] = reference.scheme.map(LuaValue.text) ?? nil
            table["path"] = .text(reference.path)
            table["query"] = reference.query.map(LuaValue.text) ?? nil
            table["fragment"] = reference.fragment.map(LuaValue.text) ?? nil
            if let parts = reference.hostParts {
                table["host"] = .text(parts.host)
                table["port"] = parts.port.map { .integer(Int64($0)) } ?? nil
                table["user"] = parts.user.map(LuaValue.text) ?? nil
                table["password"] = parts.password.map(LuaValue.text) ?? nil
            }
            return [.table(table)]
        }),
        ("resolve", { (call: borrowing HostCall) throws -> [LuaValue] in
            [.text(URLReference(try call.string(0)).resolving(URLReference(try call.string(1))).text)]
        }),
        ("query", { (call: borrowing HostCall) throws -> [LuaValue] in
            var pairs: [(key: [UInt8], value: [UInt8])] = []
            for (key, value) in try call.table(0).entries {
                guard let name = key.stringValue else { throw call.badArgument(0, "keys must be strings") }
                let values = value.tableValue?.array ?? [value]
                for element in values {
                    guard let text = scalarText(element) else {
                        throw call.badArgument(0, "'\(name)' must be a string, number, boolean or a list of them")
                    }
                    pairs.append((Array(name.utf8), text))
                }
            }
            let encoded = pairs.sorted { $0.key.lexicographicallyPrecedes($1.key) }
                .map { percentEncode($0.key) + [UInt8(ascii: "=")] + percentEncode($0.value) }
            return [.string(Array(encoded.joined(separator: [UInt8(ascii: "&")])))]
        }),
    ])

    static func scalarText(_ value: LuaValue) -> [UInt8]? {
        switch value {
        case .string(let bytes): bytes
        case .integer, .number, .boolean: Array(value.description.utf8)
        default: nil
        }
    }

    public static func percentEncode(_ bytes: [UInt8]) -> [UInt8] {
        let hex = Array("0123456789ABCDEF".utf8)
        var output: [UInt8] = []
        for byte in bytes {
            if unreserved.contains(byte) { output.append(byte) } else { output += [UInt8(ascii: "%"), hex[Int(byte >> 4)], hex[Int(byte & 15)]] }
        }
        return output
    }

    /// `%XX` becomes the byte; a malformed escape stays as it is.
    public static func percentDecode(_ bytes: [UInt8]) -> [UInt8] {
        var output: [UInt8] = []
        var index = 0
        while index < bytes.count {
            if bytes[index] == UInt8(ascii: "%"), index + 2 < bytes.count,
               let value = UInt8(String(decoding: bytes[index + 1...index + 2], as: UTF8.self), radix: 16) {
                output.append(value)
                index += 3
            } else {
                output.append(bytes[index])
                index += 1
            }
        }
        return output
    }
}
