public import LuaSandbox
import HotspotNetwork
import JSON
import ScriptContract

/// `json.encode(value)` and `json.decode(text)`, bounded in depth and size. JSON null
/// decodes to nil; a table with keys 1..n encodes as an array, any other as an object.
public enum JSONLibrary {
    static let maximumDepth = 32
    static let maximumLength = 8 << 20

    public static let module = HostModule.library(.json, functions: [
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
        var writer = JSONWriter()
        try encode(value, into: &writer, depth: 0)
        return writer.bytes
    }

    /// Writes as it walks, so the depth and size limits stop it before a large result is built.
    private static func encode(_ value: LuaValue, into writer: inout JSONWriter, depth: Int) throws {
        guard depth <= maximumDepth else { throw HostError("json.encode: nested deeper than \(maximumDepth) levels") }
        guard writer.bytes.count <= maximumLength else { throw HostError("json.encode: the result is over \(maximumLength >> 20) MiB") }
        switch value {
        case .nil: writer.writeNull()
        case .boolean(let flag): writer.write(flag)
        case .integer(let integer): writer.write(integer)
        case .number(let number):
            guard number.isFinite else { throw HostError("json.encode: \(number) has no JSON form") }
            writer.write(number)
        case .string(let bytes): writer.writeString(bytes)
        case .table(let table):
            let sequence = table.array
            if sequence.count == table.entries.count, !sequence.isEmpty {
                writer.beginArray()
                for element in sequence { try encode(element, into: &writer, depth: depth + 1) }
                writer.endArray()
                return
            }
            var keys: [(text: [UInt8], value: LuaValue)] = []
            for (key, element) in table.entries {
                switch key {
                case .string(let text): keys.append((text, element))
                case .integer(let integer): keys.append((Array(String(integer).utf8), element))
                default: throw HostError("json.encode: a \(key.typeName) key has no JSON form")
                }
            }
            writer.beginObject()
            for entry in keys.sorted(by: { $0.text.lexicographicallyPrecedes($1.text) }) {
                writer.writeKey(entry.text)
                try encode(entry.value, into: &writer, depth: depth + 1)
            }
            writer.endObject()
        case .object(let object):
            throw HostError("json.encode: a \(object.className) object has no JSON form")
        }
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
