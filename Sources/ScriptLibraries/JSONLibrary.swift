public import LuaSandbox

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
            var parser = Parser(bytes: bytes)
            do {
                let value = try parser.document()
                return [value]
            } catch let error as ParseError {
                throw HostError("json.decode: \(error.message) at byte \(parser.position + 1)")
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

    struct ParseError: Error { let message: String }

    /// A strict RFC 8259 parser with a depth limit.
    struct Parser {
        let bytes: [UInt8]
        var position = 0

        mutating func document() throws(ParseError) -> LuaValue {
            let value = try parse(depth: 0)
            skipSpace()
            guard position == bytes.count else { throw ParseError(message: "unexpected text after the value") }
            return value
        }

        private mutating func skipSpace() {
            while position < bytes.count, [0x20, 0x09, 0x0A, 0x0D].contains(bytes[position]) { position += 1 }
        }

        private mutating func expect(_ literal: String, _ value: LuaValue) throws(ParseError) -> LuaValue {
            let text = Array(literal.utf8)
            guard bytes.count - position >= text.count, Array(bytes[position..<position + text.count]) == text else {
                throw ParseError(message: "unexpected character")
            }
            position += text.count
            return value
        }

        private mutating func parse(depth: Int) throws(ParseError) -> LuaValue {
            guard depth <= JSONLibrary.maximumDepth else { throw ParseError(message: "nested deeper than \(JSONLibrary.maximumDepth) levels") }
            skipSpace()
            guard position < bytes.count else { throw ParseError(message: "unexpected end of text") }
            switch bytes[position] {
            case UInt8(ascii: "{"):
                position += 1
                var table = LuaTable()
                skipSpace()
                if position < bytes.count, bytes[position] == UInt8(ascii: "}") { position += 1; return .table(table) }
                while true {
                    skipSpace()
                    guard position < bytes.count, bytes[position] == UInt8(ascii: "\"") else { throw ParseError(message: "expected a string key") }
                    let key = try string()
                    skipSpace()
                    guard position < bytes.count, bytes[position] == UInt8(ascii: ":") else { throw ParseError(message: "expected ':'") }
                    position += 1
                    table[.string(key)] = try parse(depth: depth + 1)
                    skipSpace()
                    guard position < bytes.count else { throw ParseError(message: "unexpected end of text") }
                    position += 1
                    if bytes[position - 1] == UInt8(ascii: "}") { return .table(table) }
                    guard bytes[position - 1] == UInt8(ascii: ",") else { throw ParseError(message: "expected ',' or '}'") }
                }
            case UInt8(ascii: "["):
                position += 1
                var table = LuaTable()
                var count: Int64 = 0
                skipSpace()
                if position < bytes.count, bytes[position] == UInt8(ascii: "]") { position += 1; return .table(table) }
                while true {
                    count += 1
                    table[.integer(count)] = try parse(depth: depth + 1)
                    skipSpace()
                    guard position < bytes.count else { throw ParseError(message: "unexpected end of text") }
                    position += 1
                    if bytes[position - 1] == UInt8(ascii: "]") { return .table(table) }
                    guard bytes[position - 1] == UInt8(ascii: ",") else { throw ParseError(message: "expected ',' or ']'") }
                }
            case UInt8(ascii: "\""): return .string(try string())
            case UInt8(ascii: "t"): return try expect("true", true)
            case UInt8(ascii: "f"): return try expect("false", false)
            case UInt8(ascii: "n"): return try expect("null", nil)
            default: return try number()
            }
        }

        private mutating func number() throws(ParseError) -> LuaValue {
            let start = position
            var isInteger = true
            if position < bytes.count, bytes[position] == UInt8(ascii: "-") { position += 1 }
            let digitsStart = position
            while position < bytes.count, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(bytes[position]) { position += 1 }
            guard position > digitsStart else { throw ParseError(message: "unexpected character") }
            guard !(bytes[digitsStart] == UInt8(ascii: "0") && position - digitsStart > 1) else {
                throw ParseError(message: "a number may not start with 0")
            }
            while position < bytes.count, [UInt8(ascii: "."), UInt8(ascii: "e"), UInt8(ascii: "E"), UInt8(ascii: "+"), UInt8(ascii: "-")].contains(bytes[position])
                    || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(bytes[position]) {
                if !(UInt8(ascii: "0")...UInt8(ascii: "9")).contains(bytes[position]) { isInteger = false }
                position += 1
            }
            let text = String(decoding: bytes[start..<position], as: UTF8.self)
            if isInteger, let integer = Int64(text) { return .integer(integer) }
            guard let number = Double(text), number.isFinite else { throw ParseError(message: "malformed number") }
            return .number(number)
        }

        private mutating func string() throws(ParseError) -> [UInt8] {
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
                            guard (0xDC00..<0xE000).contains(low) else { throw ParseError(message: "invalid surrogate pair") }
                            scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00)
                        }
                        output += Array(String(Unicode.Scalar(scalar) ?? "\u{FFFD}").utf8)
                    default: throw ParseError(message: "invalid escape")
                    }
                case 0..<0x20: throw ParseError(message: "control character in a string")
                default: output.append(byte)
                }
            }
            throw ParseError(message: "unterminated string")
        }

        private mutating func hex4() throws(ParseError) -> UInt32 {
            guard bytes.count - position >= 4, let value = UInt32(String(decoding: bytes[position..<position + 4], as: UTF8.self), radix: 16) else {
                throw ParseError(message: "invalid \\u escape")
            }
            position += 4
            return value
        }
    }
}
