public import LuaSandbox
import ScriptContract

/// `base64.encode` and `base64.decode` (standard alphabet; decoding ignores white space
/// and accepts missing padding).
public enum Base64Library {
    private static let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/".utf8)

    public static let module = HostModule.library(.base64, functions: [
        ("encode", { call in [.string(encode(try call.bytes(0)))] }),
        ("decode", { (call: borrowing HostCall) throws -> [LuaValue] in
            guard let bytes = decode(try call.bytes(0)) else { throw HostError("base64.decode: the text is not base64") }
            return [.string(bytes)]
        }),
    ])

    static func encode(_ bytes: [UInt8]) -> [UInt8] {
        var output: [UInt8] = []
        output.reserveCapacity((bytes.count + 2) / 3 * 4)
        var index = 0
        while index < bytes.count {
            let chunk = bytes[index..<min(index + 3, bytes.count)]
            let value = chunk.enumerated().reduce(UInt32(0)) { $0 | UInt32($1.element) << (16 - 8 * $1.offset) }
            for position in 0..<4 {
                output.append(position <= chunk.count ? alphabet[Int(value >> (18 - 6 * position) & 63)] : UInt8(ascii: "="))
            }
            index += 3
        }
        return output
    }

    static func decode(_ text: [UInt8]) -> [UInt8]? {
        var output: [UInt8] = []
        var buffer: UInt32 = 0
        var bits = 0
        var padding = false
        for byte in text where ![0x20, 0x09, 0x0A, 0x0D].contains(byte) {
            if byte == UInt8(ascii: "=") { padding = true; continue }
            guard !padding, let value = alphabet.firstIndex(of: byte) else { return nil }
            buffer = buffer << 6 | UInt32(value)
            bits += 6
            if bits >= 8 {
                bits -= 8
                output.append(UInt8(buffer >> UInt32(bits) & 0xFF))
            }
        }
        return bits >= 6 ? nil : output
    }
}

/// `log.debug`, `log.info`, `log.warn`, `log.error`: lines in the command's events,
/// within the per-command limits.
public enum LogLibrary {
    public static let module = HostModule.library(.log, functions: [LogLevel.debug, .info, .warn, .error].map { level in
        (level.name, { (call: borrowing HostCall) throws -> [LuaValue] in
            call.log(level, call.arguments.map { $0.stringValue ?? $0.description }.joined(separator: "\t"))
            return []
        })
    })
}
