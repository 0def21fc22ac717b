/// A D-Bus value, as read from a message or to be written into one (`SystemBus`). Every
/// type of the wire format has its case, so a value of a type nobody expected is still read
/// whole and can be named in a message rather than end the reading.
public indirect enum BusValue: Sendable, Equatable {
    case byte(UInt8)
    case boolean(Bool)
    case int16(Int16)
    case uint16(UInt16)
    case int32(Int32)
    case uint32(UInt32)
    case int64(Int64)
    case uint64(UInt64)
    case double(Double)
    case string(String)
    case objectPath(String)
    case signature(String)
    /// A Unix descriptor: its place only; the message keeps (and closes) the descriptor.
    case unixFD
    /// The signature of its elements, which an empty array needs too.
    case array(elementSignature: String, [BusValue])
    case dictionaryEntry(key: BusValue, value: BusValue)
    case variant(BusValue)
    case structure([BusValue])

    /// The value's D-Bus signature.
    package var signature: String {
        switch self {
        case .byte: "y"
        case .boolean: "b"
        case .int16: "n"
        case .uint16: "q"
        case .int32: "i"
        case .uint32: "u"
        case .int64: "x"
        case .uint64: "t"
        case .double: "d"
        case .string: "s"
        case .objectPath: "o"
        case .signature: "g"
        case .unixFD: "h"
        case .array(let element, _): "a" + element
        case .dictionaryEntry(let key, let value): "{" + key.signature + value.signature + "}"
        case .variant: "v"
        case .structure(let fields): "(" + fields.map(\.signature).joined() + ")"
        }
    }

    /// A dictionary of string keys (`a{sv}` when the values are variants), as NetworkManager's
    /// settings and options are written.
    package static func dictionary(_ entries: [(String, BusValue)], valueSignature: String) -> BusValue {
        .array(elementSignature: "{s\(valueSignature)}", entries.map { .dictionaryEntry(key: .string($0.0), value: $0.1) })
    }

    /// The value inside any variants around it.
    package var unwrapped: BusValue {
        if case .variant(let inner) = self { return inner.unwrapped }
        return self
    }

    public var string: String? {
        if case .string(let text) = unwrapped { return text }
        return nil
    }

    /// An object path other than `/`, which NetworkManager uses for "none".
    public var reference: String? {
        if case .objectPath(let path) = unwrapped, path != "/" { return path }
        return nil
    }

    package var boolean: Bool? {
        if case .boolean(let flag) = unwrapped { return flag }
        return nil
    }

    /// Any integer type that holds a value of 0 or more, widened.
    public var unsigned: UInt64? {
        switch unwrapped {
        case .byte(let value): UInt64(value)
        case .uint16(let value): UInt64(value)
        case .uint32(let value): UInt64(value)
        case .uint64(let value): value
        case .int16(let value): UInt64(exactly: value)
        case .int32(let value): UInt64(exactly: value)
        case .int64(let value): UInt64(exactly: value)
        default: nil
        }
    }

    /// An array of bytes (`ay`).
    package var bytes: [UInt8]? {
        guard case .array("y", let elements) = unwrapped else { return nil }
        return elements.compactMap { if case .byte(let byte) = $0 { byte } else { nil } }
    }

    /// The elements of an array.
    package var elements: [BusValue]? {
        if case .array(_, let elements) = unwrapped { return elements }
        return nil
    }

    /// The paths of an array of object paths (`ao`), `/` left out.
    package var references: [String]? {
        guard case .array("o", let elements) = unwrapped else { return nil }
        return elements.compactMap(\.reference)
    }

    /// A dictionary with string keys (`a{sv}`, `a{sa{sv}}`), its values' variants unwrapped;
    /// nil for anything else.
    public var stringKeyed: [String: BusValue]? {
        guard case .array(let element, let entries) = unwrapped, element.hasPrefix("{s") else { return nil }
        var dictionary: [String: BusValue] = [:]
        for case .dictionaryEntry(.string(let key), let value) in entries { dictionary[key] = value.unwrapped }
        return dictionary
    }

    /// What the value is, in words, for a message about a value of an unexpected type.
    package var kind: String {
        switch unwrapped {
        case .byte: "a byte"
        case .boolean: "a boolean"
        case .int16, .int32, .int64: "a signed integer"
        case .uint16, .uint32, .uint64: "an unsigned integer"
        case .double: "a double"
        case .string: "a string"
        case .objectPath: "an object path"
        case .signature: "a signature"
        case .unixFD: "a file descriptor"
        case .array(let element, _): "an array of \(element)"
        case .dictionaryEntry: "a dictionary entry"
        case .variant: "a variant"
        case .structure: "a structure"
        }
    }
}
