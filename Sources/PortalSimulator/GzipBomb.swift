/// A gzip member of about 65 KB that inflates to over 64 MiB of zero bytes, written by hand
/// so the simulator needs no zlib: one dynamic-Huffman deflate block (RFC 1951) whose codes
/// make each 258-byte match cost two bits, the densest deflate allows.
enum GzipBomb {
    /// Matches of 258 bytes after one literal: 1 + 258 × 260,112 = 67,108,897 bytes, just over 64 MiB.
    static let matchCount = 260_112
    static let inflatedSize = 1 + 258 * matchCount

    static let bytes: [UInt8] = {
        var writer = BitWriter()
        // Gzip header: magic, deflate, no flags, no time, no extra flags, Unix.
        writer.bytes = [0x1F, 0x8B, 8, 0, 0, 0, 0, 0, 0, 3]
        writer.write(1, count: 1)  // BFINAL
        writer.write(2, count: 2)  // BTYPE: dynamic Huffman
        writer.write(286 - 257, count: 5)  // HLIT: literal/length codes 0...285
        writer.write(1 - 1, count: 5)  // HDIST: one distance code
        writer.write(18 - 4, count: 4)  // HCLEN: code length codes up to the one for length 1
        // Code length code lengths in RFC 1951's order (16, 17, 18, 0, 8, 7, 9, 6, 10, 5, 11,
        // 4, 12, 3, 13, 2, 14, 1): symbol 18 gets 1 bit, symbols 2 and 1 get 2 bits.
        for length in [0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2, 0, 2] {
            writer.write(UInt32(length), count: 3)
        }
        // Canonical code length codes: 18 is 0, 1 is 10, 2 is 11.
        func zeros(_ count: UInt32) {  // symbol 18: a run of 11...138 zero lengths
            writer.writeCode(0b0, length: 1)
            writer.write(count - 11, count: 7)
        }
        let lengthOne = (code: UInt32(0b10), length: 2), lengthTwo = (code: UInt32(0b11), length: 2)
        // Literal/length code lengths: byte 0 and end-of-block (256) 2 bits, length 258 (285) 1 bit.
        writer.writeCode(lengthTwo.code, length: lengthTwo.length)  // 0
        zeros(138)  // 1...138
        zeros(117)  // 139...255
        writer.writeCode(lengthTwo.code, length: lengthTwo.length)  // 256
        zeros(28)  // 257...284
        writer.writeCode(lengthOne.code, length: lengthOne.length)  // 285
        writer.writeCode(lengthOne.code, length: lengthOne.length)  // distance code 0 (distance 1): 1 bit
        // Canonical codes: 285 is 0, byte 0 is 10, end-of-block is 11; distance 1 is 0.
        writer.writeCode(0b10, length: 2)  // literal zero byte
        for _ in 0..<matchCount { writer.write(0, count: 2) }  // length 258, distance 1
        writer.writeCode(0b11, length: 2)  // end of block
        writer.flush()
        writer.appendLittleEndian(crc32OfZeros(count: inflatedSize))
        writer.appendLittleEndian(UInt32(truncatingIfNeeded: inflatedSize))
        return writer.bytes
    }()

    /// CRC-32 (as gzip computes it) of `count` zero bytes without going through them: one zero
    /// byte changes the CRC register by a linear map over GF(2), so `count` of them apply that
    /// map's `count`th power, found by squaring.
    static func crc32OfZeros(count: Int) -> UInt32 {
        /// A 32 × 32 bit matrix as its columns: the images of each single bit.
        typealias Matrix = [UInt32]
        func apply(_ matrix: Matrix, _ vector: UInt32) -> UInt32 {
            (0..<32).reduce(0) { vector >> $1 & 1 == 1 ? $0 ^ matrix[$1] : $0 }
        }
        func multiply(_ a: Matrix, _ b: Matrix) -> Matrix { b.map { apply(a, $0) } }
        func zeroByte(_ register: UInt32) -> UInt32 {
            (0..<8).reduce(register) { value, _ in value & 1 == 1 ? value >> 1 ^ 0xEDB8_8320 : value >> 1 }
        }
        var power: Matrix = (0..<32).map { zeroByte(1 << $0) }
        var result: Matrix = (0..<32).map { 1 << $0 }
        var remaining = count
        while remaining > 0 {
            if remaining & 1 == 1 { result = multiply(power, result) }
            power = multiply(power, power)
            remaining >>= 1
        }
        return ~apply(result, 0xFFFF_FFFF)
    }

    /// Deflate's bit order: fields least significant bit first, Huffman codes most significant first.
    private struct BitWriter {
        var bytes: [UInt8] = []
        private var pending: UInt32 = 0
        private var pendingCount = 0

        mutating func write(_ value: UInt32, count: Int) {
            for bit in 0..<count {
                pending |= (value >> bit & 1) << pendingCount
                pendingCount += 1
                if pendingCount == 8 { flush() }
            }
        }

        mutating func writeCode(_ code: UInt32, length: Int) {
            for bit in (0..<length).reversed() { write(code >> bit & 1, count: 1) }
        }

        /// Ends the current byte, padding it with zero bits.
        mutating func flush() {
            guard pendingCount > 0 else { return }
            bytes.append(UInt8(pending))
            (pending, pendingCount) = (0, 0)
        }

        mutating func appendLittleEndian(_ value: UInt32) {
            bytes += (0..<4).map { UInt8(truncatingIfNeeded: value >> (8 * $0)) }
        }
    }
}
