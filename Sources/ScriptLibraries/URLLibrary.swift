public import LuaSandbox
import HotspotNetwork
import ScriptContract

/// `url.encode`, `url.decode`, `url.parse`, `url.resolve(base, ref)`, `url.query(table)`.
public enum URLLibrary {
    private static let unreserved = Set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_.~".utf8)

    public static let module = HostModule.library(.url, functions: [
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
            [.string(try formEncoded(try call.table(0)) { call.badArgument(0, $0) })]
        }),
    ])

    /// `application/x-www-form-urlencoded` text of a table: its `{ name, value }` pairs in
    /// their order, then its names sorted, so the same table always gives the same text; a
    /// list value repeats its name.
    static func formEncoded(_ table: LuaTable, problem: (String) -> HostError) throws(HostError) -> [UInt8] {
        let ordered = table.array
        var pairs: [(key: [UInt8], value: [UInt8])] = []
        for pair in ordered {
            guard let fields = pair.tableValue?.array, fields.count == 2, let name = fields[0].stringValue,
                  let text = scalarText(fields[1]) else {
                throw problem("a pair must be { name, value } with a string name and a string, number or boolean value")
            }
            pairs.append((Array(name.utf8), text))
        }
        var named: [(key: [UInt8], value: [UInt8])] = []
        for (key, value) in table.entries {
            if let index = key.integerValue, index >= 1, index <= ordered.count { continue }
            guard let name = key.stringValue else { throw problem("keys must be strings, or a list of { name, value } pairs") }
            let values = value.tableValue?.array ?? [value]
            for element in values {
                guard let text = scalarText(element) else {
                    throw problem("'\(name)' must be a string, number, boolean or a list of them")
                }
                named.append((Array(name.utf8), text))
            }
        }
        let encoded = (pairs + named.sorted { $0.key.lexicographicallyPrecedes($1.key) })
            .map { percentEncode($0.key) + [UInt8(ascii: "=")] + percentEncode($0.value) }
        return Array(encoded.joined(separator: [UInt8(ascii: "&")]))
    }

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
