/// A Lua value that can cross the sandbox boundary: between Swift and a Lua state, and
/// between the supervisor and a worker process. Functions, userdata and threads stay
/// inside the sandbox; host objects (`HostClass`) go only from host functions into their
/// own state.
public enum LuaValue: Sendable, Hashable {
    case `nil`
    case boolean(Bool)
    case integer(Int64)
    case number(Double)
    /// Lua strings are byte strings: they may hold NULs and bytes that are not UTF-8.
    case string([UInt8])
    case table(LuaTable)
    /// A Swift object a host function hands to its script (see `HostClass`).
    case object(HostObject)

    /// A string value from Swift text.
    public static func text(_ text: String) -> LuaValue { .string(Array(text.utf8)) }

    public var isNil: Bool { if case .nil = self { true } else { false } }

    /// The value as text when it is a string (invalid UTF-8 is repaired).
    public var stringValue: String? {
        if case .string(let bytes) = self { String(decoding: bytes, as: UTF8.self) } else { nil }
    }

    public var bytesValue: [UInt8]? { if case .string(let bytes) = self { bytes } else { nil } }

    /// Integers, and floats with an exact integer value, as Lua's `math.tointeger` would.
    public var integerValue: Int64? {
        switch self {
        case .integer(let value): value
        case .number(let value): Int64(exactly: value)
        default: nil
        }
    }

    public var numberValue: Double? {
        switch self {
        case .integer(let value): Double(value)
        case .number(let value): value
        default: nil
        }
    }

    public var booleanValue: Bool? { if case .boolean(let value) = self { value } else { nil } }
    public var tableValue: LuaTable? { if case .table(let value) = self { value } else { nil } }

    /// Lua truthiness: everything but nil and false.
    public var isTruthy: Bool {
        switch self {
        case .nil, .boolean(false): false
        default: true
        }
    }

    /// Hashes a string's bytes in one pass: the synthesized hash fed them to the hasher one
    /// byte at a time, a fifth of the supervisor's time building and reading command tables.
    public func hash(into hasher: inout Hasher) {
        switch self {
        case .nil: hasher.combine(0 as UInt8)
        case .boolean(let value): hasher.combine(1 as UInt8); hasher.combine(value)
        case .integer(let value): hasher.combine(2 as UInt8); hasher.combine(value)
        case .number(let value): hasher.combine(3 as UInt8); hasher.combine(value)
        case .string(let bytes):
            hasher.combine(4 as UInt8)
            hasher.combine(bytes.count)
            bytes.withUnsafeBytes { hasher.combine(bytes: $0) }
        case .table(let table): hasher.combine(5 as UInt8); hasher.combine(table)
        case .object(let object): hasher.combine(6 as UInt8); hasher.combine(object)
        }
    }

    /// The Lua type name, as `type()` would say it.
    public var typeName: String {
        switch self {
        case .nil: "nil"
        case .boolean: "boolean"
        case .integer, .number: "number"
        case .string: "string"
        case .table: "table"
        case .object: "userdata"
        }
    }
}

/// A Lua table as a dictionary; `array` reads its sequence part.
public struct LuaTable: Sendable, Hashable {
    public var entries: [LuaValue: LuaValue]

    public init(_ entries: [LuaValue: LuaValue] = [:]) { self.entries = entries }

    /// A sequence 1...n.
    public init(array: [LuaValue]) {
        var entries: [LuaValue: LuaValue] = [:]
        for (index, value) in array.enumerated() where !value.isNil {
            entries[.integer(Int64(index + 1))] = value
        }
        self.entries = entries
    }

    public subscript(key: LuaValue) -> LuaValue {
        get { entries[key] ?? .nil }
        set {
            // Setting nil removes the key, as in Lua (a ternary here would store `.nil`).
            if newValue.isNil { entries.removeValue(forKey: key) } else { entries[key] = newValue }
        }
    }

    public subscript(key: String) -> LuaValue {
        get { self[.text(key)] }
        set { self[.text(key)] = newValue }
    }

    /// The values at 1, 2, ... up to the first nil.
    public var array: [LuaValue] {
        var values: [LuaValue] = []
        var index: Int64 = 1
        while let value = entries[.integer(index)] {
            values.append(value)
            index += 1
        }
        return values
    }

    public var isEmpty: Bool { entries.isEmpty }
}

extension LuaValue: ExpressibleByNilLiteral, ExpressibleByBooleanLiteral,
    ExpressibleByIntegerLiteral, ExpressibleByFloatLiteral, ExpressibleByStringLiteral,
    ExpressibleByArrayLiteral, ExpressibleByDictionaryLiteral
{
    public init(nilLiteral: ()) { self = .nil }
    public init(booleanLiteral value: Bool) { self = .boolean(value) }
    public init(integerLiteral value: Int64) { self = .integer(value) }
    public init(floatLiteral value: Double) { self = .number(value) }
    public init(stringLiteral value: String) { self = .text(value) }
    public init(arrayLiteral elements: LuaValue...) { self = .table(LuaTable(array: elements)) }
    public init(dictionaryLiteral elements: (LuaValue, LuaValue)...) {
        var table = LuaTable()
        for (key, value) in elements { table[key] = value }
        self = .table(table)
    }
}

extension LuaValue: CustomStringConvertible {
    public var description: String {
        switch self {
        case .nil: "nil"
        case .boolean(let value): String(value)
        case .integer(let value): String(value)
        case .number(let value): String(value)
        case .string: "\"\(stringValue!)\""
        case .table(let table):
            "{" + table.entries.map { "[\($0.key)] = \($0.value)" }.sorted().joined(separator: ", ") + "}"
        case .object(let object): "<\(object.className) object>"
        }
    }
}
