/// Values by SSID, told apart by their bytes as 802.11 has them: a `[String: Value]` would
/// merge the NFC and NFD forms of one name (Swift compares strings by canonical
/// equivalence), and two networks would share one session or one saved choice.
///
/// Saved, it is a list of entries, each SSID in hex beside a readable form, since a JSON
/// object's keys are strings that decoders (and people's tools) compare the same way; the
/// object of the format before it is still read.
public struct BySSID<Value> {
    fileprivate struct SSIDKey: Hashable {
        let ssid: String
        static func == (left: SSIDKey, right: SSIDKey) -> Bool { left.ssid.utf8.elementsEqual(right.ssid.utf8) }
        func hash(into hasher: inout Hasher) {
            for byte in ssid.utf8 { hasher.combine(byte) }
        }
    }

    private var values: [SSIDKey: Value] = [:]

    public init() {}

    public subscript(ssid: String) -> Value? {
        get { values[SSIDKey(ssid: ssid)] }
        set { values[SSIDKey(ssid: ssid)] = newValue }
    }

    public subscript(ssid: String, default value: @autoclosure () -> Value) -> Value {
        get { values[SSIDKey(ssid: ssid), default: value()] }
        set { values[SSIDKey(ssid: ssid)] = newValue }
    }

    public var ssids: [String] { values.keys.map(\.ssid) }
    public var all: [(ssid: String, value: Value)] { values.map { ($0.key.ssid, $0.value) } }
    public var allValues: [Value] { Array(values.values) }
    public var isEmpty: Bool { values.isEmpty }
}

extension BySSID: Sendable where Value: Sendable {}
extension BySSID: Equatable where Value: Equatable {}

extension BySSID: ExpressibleByDictionaryLiteral {
    public init(dictionaryLiteral elements: (String, Value)...) {
        for (ssid, value) in elements { self[ssid] = value }
    }
}

extension BySSID: Codable where Value: Codable {
    private struct Entry: Codable {
        let ssid: String
        let ssidHex: String
        let value: Value
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        if let entries = try? container.decode([Entry].self) {
            for entry in entries { self[SSIDText.ssid(hex: entry.ssidHex) ?? entry.ssid] = entry.value }
        } else {
            for (ssid, value) in try container.decode([String: Value].self) { self[ssid] = value }
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(SSIDText.sorted(all).map { Entry(ssid: $0.ssid, ssidHex: SSIDText.hex($0.ssid), value: $0.value) })
    }
}

/// A set of SSIDs, told apart by their bytes (see `BySSID`); saved as a list of entries, a
/// list of plain strings (the format before it) still read.
public struct SSIDSet: Sendable, Equatable {
    private var members = BySSID<Bool>()

    public init() {}

    public func contains(_ ssid: String) -> Bool { members[ssid] != nil }
    public mutating func insert(_ ssid: String) { members[ssid] = true }
    public mutating func remove(_ ssid: String) { members[ssid] = nil }
    public var isEmpty: Bool { members.isEmpty }
    public var ssids: [String] { members.ssids }
}

extension SSIDSet: ExpressibleByArrayLiteral {
    public init(arrayLiteral ssids: String...) {
        for ssid in ssids { insert(ssid) }
    }
}

extension SSIDSet: Codable {
    private struct Entry: Codable {
        let ssid: String
        let ssidHex: String
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        if let entries = try? container.decode([Entry].self) {
            for entry in entries { insert(SSIDText.ssid(hex: entry.ssidHex) ?? entry.ssid) }
        } else {
            for ssid in try container.decode([String].self) { insert(ssid) }
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        let sorted = SSIDText.sorted(ssids.map { (ssid: $0, value: ()) })
        try container.encode(sorted.map { Entry(ssid: $0.ssid, ssidHex: SSIDText.hex($0.ssid)) })
    }
}

/// An SSID's bytes as hex, and back.
private enum SSIDText {
    static func hex(_ ssid: String) -> String {
        let digits = Array("0123456789abcdef".utf8)
        var text: [UInt8] = []
        for byte in ssid.utf8 { text += [digits[Int(byte >> 4)], digits[Int(byte & 15)]] }
        return String(decoding: text, as: UTF8.self)
    }

    /// Nil for text that is not whole bytes in hex, or not UTF-8 (an SSID here is a `String`).
    static func ssid(hex: String) -> String? {
        let digits = Array(hex.utf8)
        guard digits.count % 2 == 0 else { return nil }
        var bytes: [UInt8] = []
        for index in stride(from: 0, to: digits.count, by: 2) {
            guard let high = value(digits[index]), let low = value(digits[index + 1]) else { return nil }
            bytes.append(high << 4 | low)
        }
        return String(validating: bytes, as: UTF8.self)
    }

    private static func value(_ digit: UInt8) -> UInt8? {
        switch digit {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): digit - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): digit - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): digit - UInt8(ascii: "A") + 10
        default: nil
        }
    }

    /// In byte order, so that a saved file does not change when nothing in it did.
    static func sorted<Value>(_ entries: [(ssid: String, value: Value)]) -> [(ssid: String, value: Value)] {
        entries.sorted { $0.ssid.utf8.lexicographicallyPrecedes($1.ssid.utf8) }
    }
}
