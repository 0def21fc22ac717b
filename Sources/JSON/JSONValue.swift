/// A JSON document as a strict RFC 8259 parser reads it, with a depth limit: what `json.decode`
/// turns into Lua values and the Captive Portal API client reads.
public enum JSONValue: Sendable, Equatable {
    case null
    case boolean(Bool)
    case integer(Int64)
    case number(Double)
    case string([UInt8])
    case array([JSONValue])
    /// Members in document order; a repeated name appears twice (the last one counts).
    case object([(name: [UInt8], value: JSONValue)])

    public struct ParseError: Error, Sendable, Equatable, CustomStringConvertible {
        public let message: String
        /// Where the parser stopped, from 1.
        public let byte: Int
        public var description: String { "\(message) at byte \(byte)" }
    }

    public static func parse(_ bytes: [UInt8], maximumDepth: Int) throws(ParseError) -> JSONValue {
        var parser = Parser(bytes: bytes, maximumDepth: maximumDepth)
        do throws(Parser.Failure) {
            return try parser.document()
        } catch {
            throw ParseError(message: error.message, byte: parser.position + 1)
        }
    }

    /// The value of the member `name` of an object (the last of that name), nil for anything else.
    public subscript(name: String) -> JSONValue? {
        guard case .object(let members) = self else { return nil }
        let key = Array(name.utf8)
        return members.last { $0.name == key }?.value
    }

    public static func == (lhs: JSONValue, rhs: JSONValue) -> Bool {
        switch (lhs, rhs) {
        case (.null, .null): true
        case (.boolean(let a), .boolean(let b)): a == b
        case (.integer(let a), .integer(let b)): a == b
        case (.number(let a), .number(let b)): a == b
        case (.string(let a), .string(let b)): a == b
        case (.array(let a), .array(let b)): a == b
        case (.object(let a), .object(let b)): a.count == b.count && zip(a, b).allSatisfy { $0.name == $1.name && $0.value == $1.value }
        default: false
        }
    }

    private struct Parser {
        struct Failure: Error { let message: String }

        let bytes: [UInt8]
        let maximumDepth: Int
        var position = 0

        init(bytes: [UInt8], maximumDepth: Int) {
            self.bytes = bytes
            self.maximumDepth = maximumDepth
        }

        mutating func document() throws(Failure) -> JSONValue {
            let value = try parse(depth: 0)
            skipSpace()
            guard position == bytes.count else { throw Failure(message: "unexpected text after the value") }
            return value
        }

        private mutating func skipSpace() {
            while position < bytes.count, [0x20, 0x09, 0x0A, 0x0D].contains(bytes[position]) { position += 1 }
        }

        private mutating func expect(_ literal: String, _ value: JSONValue) throws(Failure) -> JSONValue {
            let text = Array(literal.utf8)
            guard bytes.count - position >= text.count, Array(bytes[position..<position + text.count]) == text else {
                throw Failure(message: "unexpected character")
            }
            position += text.count
            return value
        }

        private mutating func parse(depth: Int) throws(Failure) -> JSONValue {
            guard depth <= maximumDepth else { throw Failure(message: "nested deeper than \(maximumDepth) levels") }
            skipSpace()
            guard position < bytes.count else { throw Failure(message: "unexpected end of text") }
            switch bytes[position] {
            case UInt8(ascii: "{"):
                position += 1
                var members: [(name: [UInt8], value: JSONValue)] = []
                skipSpace()
                if position < bytes.count, bytes[position] == UInt8(ascii: "}") { position += 1; return .object(members) }
                while true {
                    skipSpace()
                    guard position < bytes.count, bytes[position] == UInt8(ascii: "\"") else { throw Failure(message: "expected a string key") }
                    let key = try string()
                    skipSpace()
                    guard position < bytes.count, bytes[position] == UInt8(ascii: ":") else { throw Failure(message: "expected ':'") }
                    position += 1
                    members.append((key, try parse(depth: depth + 1)))
                    skipSpace()
                    guard position < bytes.count else { throw Failure(message: "unexpected end of text") }
                    position += 1
                    if bytes[position - 1] == UInt8(ascii: "}") { return .object(members) }
                    guard bytes[position - 1] == UInt8(ascii: ",") else { throw Failure(message: "expected ',' or '}'") }
                }
            case UInt8(ascii: "["):
                position += 1
                var elements: [JSONValue] = []
                skipSpace()
                if position < bytes.count, bytes[position] == UInt8(ascii: "]") { position += 1; return .array(elements) }
                while true {
                    elements.append(try parse(depth: depth + 1))
                    skipSpace()
                    guard position < bytes.count else { throw Failure(message: "unexpected end of text") }
                    position += 1
                    if bytes[position - 1] == UInt8(ascii: "]") { return .array(elements) }
                    guard bytes[position - 1] == UInt8(ascii: ",") else { throw Failure(message: "expected ',' or ']'") }
                }
            case UInt8(ascii: "\""): return .string(try string())
            case UInt8(ascii: "t"): return try expect("true", .boolean(true))
            case UInt8(ascii: "f"): return try expect("false", .boolean(false))
            case UInt8(ascii: "n"): return try expect("null", .null)
            default: return try number()
            }
        }

        private mutating func number() throws(Failure) -> JSONValue {
            let start = position
            var isInteger = true
            if position < bytes.count, bytes[position] == UInt8(ascii: "-") { position += 1 }
            let digitsStart = position
            while position < bytes.count, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(bytes[position]) { position += 1 }
            guard position > digitsStart else { throw Failure(message: "unexpected character") }
            guard !(bytes[digitsStart] == UInt8(ascii: "0") && position - digitsStart > 1) else {
                throw Failure(message: "a number may not start with 0")
            }
            while position < bytes.count, [UInt8(ascii: "."), UInt8(ascii: "e"), UInt8(ascii: "E"), UInt8(ascii: "+"), UInt8(ascii: "-")].contains(bytes[position])
                    || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(bytes[position]) {
                if !(UInt8(ascii: "0")...UInt8(ascii: "9")).contains(bytes[position]) { isInteger = false }
                position += 1
            }
            let text = String(decoding: bytes[start..<position], as: UTF8.self)
            if isInteger, let integer = Int64(text) { return .integer(integer) }
            guard let number = Double(text), number.isFinite else { throw Failure(message: "malformed number") }
            return .number(number)
        }

        private mutating func string() throws(Failure) -> [UInt8] {
            position += 1  // the opening quote
            var output: [UInt8] = []
            while position < bytes.count {
                let byte = bytes[position]
                position += 1
                switch byte {
                case UInt8(ascii: "\""): return output
                case UInt8(ascii: "\\"):
                    guard position < bytes.count else { break }
                    let escape = bytes[position]
                    position += 1
                    switch escape {
                    case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): output.append(escape)
                    case UInt8(ascii: "b"): output.append(8)
                    case UInt8(ascii: "f"): output.append(12)
                    case UInt8(ascii: "n"): output.append(10)
                    case UInt8(ascii: "r"): output.append(13)
                    case UInt8(ascii: "t"): output.append(9)
                    case UInt8(ascii: "u"):
                        var scalar = try hex4()
                        if (0xD800..<0xDC00).contains(scalar), bytes.count - position >= 6,
                           bytes[position] == UInt8(ascii: "\\"), bytes[position + 1] == UInt8(ascii: "u") {
                            position += 2
                            let low = try hex4()
                            guard (0xDC00..<0xE000).contains(low) else { throw Failure(message: "invalid surrogate pair") }
                            scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00)
                        }
                        output += Array(String(Unicode.Scalar(scalar) ?? "\u{FFFD}").utf8)
                    default: throw Failure(message: "invalid escape")
                    }
                case 0..<0x20: throw Failure(message: "control character in a string")
                default: output.append(byte)
                }
            }
            throw Failure(message: "unterminated string")
        }

        private mutating func hex4() throws(Failure) -> UInt32 {
            guard bytes.count - position >= 4, let value = UInt32(String(decoding: bytes[position..<position + 4], as: UTF8.self), radix: 16) else {
                throw Failure(message: "invalid \\u escape")
            }
            position += 4
            return value
        }
    }
}
