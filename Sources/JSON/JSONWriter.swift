/// The project's one JSON writer: the event lines, `json.encode` and the portal simulator's
/// Captive Portal API answers all write through it, so they escape and format alike. It sits
/// beside the parser (`JSONValue`), Foundation-free, because `json.encode` runs inside the
/// worker processes.
///
/// Strings are bytes, written as they are except `"` and `\`, which take a backslash, and the
/// control characters below 0x20, which become `\n`, `\r`, `\t` or `\u00xx` (lowercase hex):
/// `/` and non-ASCII stay as they are, and bytes that are not UTF-8 pass through, since Lua
/// strings are bytes.
public struct JSONWriter: Sendable {
    /// What separates elements and members, and a key from its value.
    public enum Layout: Sendable {
        /// `,` and `:`: the event lines and `json.encode`.
        case compact
        /// `, ` and `: `, as people write JSON by hand: the simulator's answers.
        case spaced
    }

    public private(set) var bytes: [UInt8] = []
    private let layout: Layout
    /// Whether the next value or key needs a comma before it: after a value, not after an
    /// opening bracket or a key.
    private var followsValue = false

    public init(layout: Layout = .compact) { self.layout = layout }

    public mutating func write(_ value: JSONValue) {
        switch value {
        case .null: writeNull()
        case .boolean(let flag): write(flag)
        case .integer(let integer): write(integer)
        case .number(let number): write(number)
        case .string(let text): writeString(text)
        case .array(let elements):
            beginArray()
            for element in elements { write(element) }
            endArray()
        case .object(let members):
            beginObject()
            for member in members {
                writeKey(member.name)
                write(member.value)
            }
            endObject()
        }
    }

    public mutating func writeNull() { scalar("null") }

    public mutating func write(_ flag: Bool) { scalar(flag ? "true" : "false") }

    public mutating func write(_ integer: Int64) { scalar(String(integer)) }

    /// Finite numbers only: the callers turn away the others, which JSON cannot write.
    public mutating func write(_ number: Double) { scalar(number.plainDescription) }

    public mutating func writeString(_ text: [UInt8]) {
        separate()
        appendQuoted(text)
        followsValue = true
    }

    public mutating func beginArray() { open(UInt8(ascii: "[")) }

    public mutating func endArray() { close(UInt8(ascii: "]")) }

    public mutating func beginObject() { open(UInt8(ascii: "{")) }

    /// The name of the next member, whose value comes next.
    public mutating func writeKey(_ name: [UInt8]) {
        separate()
        appendQuoted(name)
        bytes.append(UInt8(ascii: ":"))
        if layout == .spaced { bytes.append(UInt8(ascii: " ")) }
        followsValue = false
    }

    public mutating func endObject() { close(UInt8(ascii: "}")) }

    private mutating func scalar(_ text: String) {
        separate()
        bytes += text.utf8
        followsValue = true
    }

    private mutating func open(_ bracket: UInt8) {
        separate()
        bytes.append(bracket)
        followsValue = false
    }

    private mutating func close(_ bracket: UInt8) {
        bytes.append(bracket)
        followsValue = true
    }

    private mutating func separate() {
        guard followsValue else { return }
        bytes.append(UInt8(ascii: ","))
        if layout == .spaced { bytes.append(UInt8(ascii: " ")) }
    }

    private mutating func appendQuoted(_ text: [UInt8]) {
        let hexDigits = Array("0123456789abcdef".utf8)
        bytes.append(UInt8(ascii: "\""))
        for byte in text {
            switch byte {
            case UInt8(ascii: "\""), UInt8(ascii: "\\"): bytes += [UInt8(ascii: "\\"), byte]
            case UInt8(ascii: "\n"): bytes += [UInt8(ascii: "\\"), UInt8(ascii: "n")]
            case UInt8(ascii: "\r"): bytes += [UInt8(ascii: "\\"), UInt8(ascii: "r")]
            case UInt8(ascii: "\t"): bytes += [UInt8(ascii: "\\"), UInt8(ascii: "t")]
            case 0..<0x20:
                bytes += [UInt8(ascii: "\\"), UInt8(ascii: "u"), UInt8(ascii: "0"), UInt8(ascii: "0"), hexDigits[Int(byte >> 4)], hexDigits[Int(byte & 15)]]
            default: bytes.append(byte)
            }
        }
        bytes.append(UInt8(ascii: "\""))
    }
}

extension JSONValue {
    /// The document as `JSONWriter` writes it.
    public func serialized(layout: JSONWriter.Layout = .compact) -> [UInt8] {
        var writer = JSONWriter(layout: layout)
        writer.write(self)
        return writer.bytes
    }

    /// An object of `members`, in their order, named by strings.
    package init(members: [(name: String, value: JSONValue)]) {
        self = .object(members.map { (Array($0.name.utf8), $0.value) })
    }
}

extension Double {
    /// Without a fractional part when it has none ("12", "12.5"), as JSON writes numbers.
    package var plainDescription: String {
        rounded() == self && abs(self) < 1e15 ? String(Int64(self)) : String(self)
    }
}
