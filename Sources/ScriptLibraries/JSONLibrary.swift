public import LuaSandbox
import HotspotNetwork

/// `json.encode(value)` and `json.decode(text)`, bounded in depth and size. JSON null
/// decodes to nil; a table with keys 1..n encodes as an array, any other as an object.
public enum JSONLibrary {
    static let maximumDepth = 32
    static let maximumLength = 8 << 20

    public static let module = HostModule("json", functions: [
        ("encode", { call in [.string(try encoded(call[0]))] }),
        ("decode", { (call: borrowing HostCall) throws -> [LuaValue] in
            let bytes = try call.bytes(0)
            guard bytes.count <= maximumLength else { throw HostError("json.decode: the text is over \(maximumLength >> 20) MiB") }
            do throws(JSONValue.ParseError) {
                return [luaValue(try JSONValue.parse(bytes, maximumDepth: maximumDepth))]
            } catch {
                throw HostError("json.decode: \(error)")
            }
        }),
    ])

    static func encoded(_ value: LuaValue) throws -> [UInt8] {
        var output: [UInt8] = []
        try encode(value, into: &output, depth: 0)
        return output
    }

    private static func encode(_ value: LuaValue, into output: inout [UInt8], depth: Int) throws {
        guard depth <= maximumDepth else { throw HostError("json.encode: nested deeper than \(maximumDepth) levels") }
        guard output.count <= maximumLength else { throw HostError("json.encode: the result is over \(maximumLength >> 20) MiB") }
        switch value {
        case .nil: output += Array("null".utf8)
        case .boolean(let flag): output += Array((flag ? "true" : "false").utf8)
        case .integer(let integer): output += Array(String(integer).utf8)
        case .number(let number):
            guard number.isFinite else { throw HostError("json.encode: \(number) has no JSON form") }
            output += Array((number == number.rounded() && abs(number) < 1e15 ? String(Int64(number)) : String(number)).utf8)
        case .string(let bytes): appendString(bytes, to: &output)
        case .table(let table):
            let sequence = table.array
            if sequence.count == table.entries.count, !sequence.isEmpty {
                output.append(UInt8(ascii: "["))
                for (index, element) in sequence.enumerated() {
                    if index > 0 { output.append(UInt8(ascii: ",")) }
                    try encode(element, into: &output, depth: depth + 1)
                }
                output.append(UInt8(ascii: "]"))
                return
            }
            output.append(UInt8(ascii: "{"))
            var keys: [(text: [UInt8], value: LuaValue)] = []
            for (key, element) in table.entries {
                switch key {
                case .string(let text): keys.append((text, element))
                case .integer(let integer): keys.append((Array(String(integer).utf8), element))
                default: throw HostError("json.encode: a \(key.typeName) key has no JSON form")
                }
            }
            for (index, entry) in keys.sorted(by: { $0.text.lexicographicallyPrecedes($1.text) }).enumerated() {
                if index > 0 { output.append(UInt8(ascii: ",")) }
                appendString(entry.text, to: &output)
                output.append(UInt8(ascii: ":"))
                try encode(entry.value, into: &output, depth: depth + 1)
            }
            output.append(UInt8(ascii: "}"))
        case .object(let object):
            throw HostError("json.encode: a \(object.className) object has no JSON form")
        }
    }

    private static func appendString(_ bytes: [UInt8], to output: inout [UInt8]) {
        let hex = Array("0123456789abcdef".utf8)
        output.append(UInt8(ascii: "\""))
        for byte in bytes {
            switch byte {
            case UInt8(ascii: "\""): output += [UInt8(ascii: "\\"), UInt8(ascii: "\"")]
            case UInt8(ascii: "\\"): output += [UInt8(ascii: "\\"), UInt8(ascii: "\\")]
            case UInt8(ascii: "\n"): output += [UInt8(ascii: "\\"), UInt8(ascii: "n")]
            case UInt8(ascii: "\r"): output += [UInt8(ascii: "\\"), UInt8(ascii: "r")]
            case UInt8(ascii: "\t"): output += [UInt8(ascii: "\\"), UInt8(ascii: "t")]
            case 0..<0x20: output += Array("\\u00".utf8) + [hex[Int(byte >> 4)], hex[Int(byte & 15)]]
            default: output.append(byte)
            }
        }
        output.append(UInt8(ascii: "\""))
    }

    /// The Lua value of a parsed document: objects and arrays become tables, null nil.
    private static func luaValue(_ value: JSONValue) -> LuaValue {
        switch value {
        case .null: .nil
        case .boolean(let flag): .boolean(flag)
        case .integer(let integer): .integer(integer)
        case .number(let number): .number(number)
        case .string(let bytes): .string(bytes)
        case .array(let elements): .table(LuaTable(array: elements.map(luaValue)))
        case .object(let members):
            .table(members.reduce(into: LuaTable()) { table, member in table[.string(member.name)] = luaValue(member.value) })
        }
    }
}
