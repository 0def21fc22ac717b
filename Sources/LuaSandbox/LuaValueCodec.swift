internal import CLuaSandbox

/// Values encoded once for the engine, to send with many calls (`ScriptCall.encodedArguments`)
/// without encoding them for each: arguments that stay the same from call to call.
public struct EncodedLuaValues: Sendable {
    let count: Int
    let bytes: [UInt8]

    public init(_ values: [LuaValue]) throws(LuaScriptError) { self = try LuaValueCodec.encode(values: values) }

    fileprivate init(count: Int, bytes: [UInt8]) {
        self.count = count
        self.bytes = bytes
    }
}

/// The byte encoding of values shared with the C half and the worker protocol:
/// a tuple is a u32 count followed by values; a value is a tag byte and its payload
/// (little-endian integers, u32-prefixed strings, u32-counted key/value pairs).
enum LuaValueCodec {
    /// Host objects are encoded by `objects` (the registry of the state they go to); without
    /// it they are refused, since they cannot leave their state.
    static func encode(tuple values: [LuaValue],
                       objects: ((HostObject, inout [UInt8]) -> Void)? = nil) throws(LuaScriptError) -> [UInt8] {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(16)
        appendUInt32(UInt32(values.count), to: &bytes)
        for value in values { try append(value, to: &bytes, objects: objects) }
        return bytes
    }

    /// A tuple of `values` followed by values already encoded (`EncodedLuaValues`): arguments
    /// that many calls have in common, or that a caller sends unchanged call after call.
    static func encode(tuple values: [LuaValue], followedBy encoded: [EncodedLuaValues]) throws(LuaScriptError) -> [UInt8] {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(64 + encoded.reduce(0) { $0 + $1.bytes.count })
        appendUInt32(UInt32(values.count + encoded.reduce(0) { $0 + $1.count }), to: &bytes)
        for value in values { try append(value, to: &bytes, objects: nil) }
        for values in encoded { bytes.append(contentsOf: values.bytes) }
        return bytes
    }

    static func encode(values: [LuaValue]) throws(LuaScriptError) -> EncodedLuaValues {
        var bytes: [UInt8] = []
        for value in values { try append(value, to: &bytes, objects: nil) }
        return EncodedLuaValues(count: values.count, bytes: bytes)
    }

    private static func append(_ value: LuaValue, to bytes: inout [UInt8],
                               objects: ((HostObject, inout [UInt8]) -> Void)?) throws(LuaScriptError) {
        switch value {
        case .nil: bytes.append(UInt8(SBX_TAG_NIL))
        case .boolean(let flag): bytes.append(UInt8(flag ? SBX_TAG_TRUE : SBX_TAG_FALSE))
        case .integer(let integer):
            bytes.append(UInt8(SBX_TAG_INTEGER))
            appendUInt64(UInt64(bitPattern: integer), to: &bytes)
        case .number(let number):
            bytes.append(UInt8(SBX_TAG_NUMBER))
            appendUInt64(number.bitPattern, to: &bytes)
        case .string(let string):
            bytes.append(UInt8(SBX_TAG_STRING))
            appendUInt32(UInt32(string.count), to: &bytes)
            bytes.append(contentsOf: string)
        case .table(let table):
            bytes.append(UInt8(SBX_TAG_TABLE))
            appendUInt32(UInt32(table.entries.count), to: &bytes)
            for (key, value) in table.entries {
                try append(key, to: &bytes, objects: objects)
                try append(value, to: &bytes, objects: objects)
            }
        case .object(let object):
            guard let objects else {
                throw LuaScriptError(.invalidValue, "a \(object.className) object cannot leave the Lua state it belongs to")
            }
            objects(object, &bytes)
        }
    }

    static func appendUInt32(_ value: UInt32, to bytes: inout [UInt8]) {
        withUnsafeBytes(of: value.littleEndian) { bytes.append(contentsOf: $0) }
    }

    static func appendUInt64(_ value: UInt64, to bytes: inout [UInt8]) {
        withUnsafeBytes(of: value.littleEndian) { bytes.append(contentsOf: $0) }
    }

    struct MalformedError: Error {}

    static func decode(tuple bytes: some Collection<UInt8>) throws(MalformedError) -> [LuaValue] {
        var reader = ByteReader(Array(bytes))
        let count = try reader.uint32()
        guard count <= reader.remaining else { throw MalformedError() }
        var values: [LuaValue] = []
        values.reserveCapacity(Int(count))
        for _ in 0..<count { values.append(try reader.value(depth: 0)) }
        return values
    }
}

/// Bounds-checked reading of the protocol's bytes; nothing a peer sends can trap.
struct ByteReader {
    private let bytes: [UInt8]
    private(set) var position = 0

    init(_ bytes: [UInt8]) { self.bytes = bytes }

    var remaining: Int { bytes.count - position }

    mutating func uint8() throws(LuaValueCodec.MalformedError) -> UInt8 {
        guard remaining >= 1 else { throw .init() }
        defer { position += 1 }
        return bytes[position]
    }

    mutating func uint32() throws(LuaValueCodec.MalformedError) -> UInt32 {
        UInt32(truncatingIfNeeded: try fixedWidth(4))
    }

    mutating func uint64() throws(LuaValueCodec.MalformedError) -> UInt64 { try fixedWidth(8) }

    private mutating func fixedWidth(_ width: Int) throws(LuaValueCodec.MalformedError) -> UInt64 {
        guard remaining >= width else { throw .init() }
        var value: UInt64 = 0
        for index in 0..<width { value |= UInt64(bytes[position + index]) << (8 * index) }
        position += width
        return value
    }

    mutating func bytes(_ count: Int) throws(LuaValueCodec.MalformedError) -> [UInt8] {
        guard count >= 0, remaining >= count else { throw .init() }
        defer { position += count }
        return Array(bytes[position..<position + count])
    }

    /// A u32-prefixed byte string.
    mutating func string() throws(LuaValueCodec.MalformedError) -> [UInt8] {
        try bytes(Int(try uint32()))
    }

    mutating func text() throws(LuaValueCodec.MalformedError) -> String {
        String(decoding: try string(), as: UTF8.self)
    }

    mutating func value(depth: Int) throws(LuaValueCodec.MalformedError) -> LuaValue {
        guard depth <= SBX_MAX_DEPTH else { throw .init() }
        switch Int(try uint8()) {
        case SBX_TAG_NIL: return .nil
        case SBX_TAG_FALSE: return .boolean(false)
        case SBX_TAG_TRUE: return .boolean(true)
        case SBX_TAG_INTEGER: return .integer(Int64(bitPattern: try uint64()))
        case SBX_TAG_NUMBER: return .number(Double(bitPattern: try uint64()))
        case SBX_TAG_STRING: return .string(try string())
        case SBX_TAG_TABLE:
            let count = try uint32()
            guard count <= remaining else { throw .init() }
            var table = LuaTable()
            for _ in 0..<count {
                let key = try value(depth: depth + 1)
                // No Lua table has one, and the state's decoder refuses them too.
                if key.isNil || key.numberValue?.isNaN == true { throw .init() }
                table[key] = try value(depth: depth + 1)
            }
            return .table(table)
        default: throw .init()
        }
    }
}
