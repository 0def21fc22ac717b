extension Substring {
    /// Without the whitespace at either end.
    package func trimmingWhitespace() -> String {
        guard let first = firstIndex(where: { !$0.isWhitespace }), let last = lastIndex(where: { !$0.isWhitespace }) else {
            return ""
        }
        return String(self[first...last])
    }
}

extension String {
    package func trimmingWhitespace() -> String { self[...].trimmingWhitespace() }
}

extension String {
    /// As long as a script's log line may be (the sandbox's SBX_LOG_RECORD_BYTES).
    package static let maximumLineBytes = 4096

    /// The text cut as the sandbox cuts a long log line: its start, between UTF-8 characters,
    /// then ` [cut: N bytes in all]`, within `maximumLineBytes`. A command's error can quote a
    /// whole portal page, which a hostile portal controls; every reply and event carries it.
    package func boundedLikeALogLine() -> String {
        let bytes = utf8.count
        guard bytes > Self.maximumLineBytes else { return self }
        let mark = " [cut: \(bytes) bytes in all]"
        var kept = utf8.index(utf8.startIndex, offsetBy: Self.maximumLineBytes - mark.utf8.count)
        while kept > utf8.startIndex, UTF8.isContinuation(utf8[kept]) { kept = utf8.index(before: kept) }
        return String(self[..<kept]) + mark
    }
}

extension String {
    /// An SSID's bytes as text: as they are when they are UTF-8 without control characters;
    /// otherwise every byte that is not printable text written `\xHH` (and `\` as `\\`), so
    /// that two SSIDs stay two (decoding would make every invalid byte U+FFFD). `escaped`
    /// says which. SSIDs are bytes: no Unicode normalization, so NFC and NFD names differ.
    package static func ssid(_ bytes: [UInt8]) -> (text: String, escaped: Bool) {
        if let text = String(validating: bytes, as: UTF8.self), !text.unicodeScalars.contains(where: \.isControl) {
            return (text, false)
        }
        return (escaping(bytes, backslash: true), true)
    }

    /// Why `ssid` cannot name a Wi-Fi network, or nil: 802.11 gives an SSID 1 to 32 bytes,
    /// and a NUL would end it early wherever it becomes a C string (NetworkManager, wpa_supplicant).
    package static func ssidProblem(_ ssid: String) -> String? {
        let bytes = ssid.utf8.count
        let shown = ssid.escapingControlCharacters()
        if !(1...32).contains(bytes) {
            return "the SSID \"\(shown)\" is \(bytes) bytes; a Wi-Fi network's name has 1 to 32 (UTF-8): give it as the network broadcasts it"
        }
        if ssid.utf8.contains(0) {
            return "the SSID \"\(shown)\" holds a NUL byte, which no Wi-Fi network's name can: give it as the network broadcasts it"
        }
        return nil
    }

    /// The text with every control character (C0, DEL, C1: escape sequences, carriage
    /// returns, newlines, NULs) written `\xHH`, for a terminal, a table or a log line. Every
    /// text output applies it to what came from outside (portals' URLs and pages, SSIDs,
    /// scripts' messages): a portal's `Location` header could otherwise retitle or clear the
    /// operator's terminal, and an SSID with a newline forge a table's line. `keepingNewlines`
    /// for the journal, whose entries are records: a newline there starts no other entry.
    package func escapingControlCharacters(keepingNewlines: Bool = false) -> String {
        let escaped = { (scalar: Unicode.Scalar) in scalar.isControl && !(keepingNewlines && scalar == "\n") }
        guard unicodeScalars.contains(where: escaped) else { return self }
        return Self.escaping(Array(utf8), backslash: false, keepingNewlines: keepingNewlines)
    }

    private static func escaping(_ bytes: [UInt8], backslash: Bool, keepingNewlines: Bool = false) -> String {
        var text = ""
        var parser = Unicode.UTF8.ForwardParser()
        var iterator = bytes.makeIterator()
        var position = 0
        while true {
            switch parser.parseScalar(from: &iterator) {
            case .valid(let encoded):
                let scalar = Unicode.UTF8.decode(encoded)
                if backslash, scalar == "\\" {
                    text += "\\\\"
                } else if scalar.isControl && !(keepingNewlines && scalar == "\n") {
                    text += encoded.map(hex).joined()
                } else {
                    text.unicodeScalars.append(scalar)
                }
                position += encoded.count
            case .error(let length):
                text += bytes[position..<(position + length)].map(hex).joined()
                position += length
            case .emptyInput:
                return text
            }
        }
    }

    private static func hex(_ byte: UInt8) -> String {
        let digits = Array("0123456789abcdef")
        return "\\x" + String([digits[Int(byte >> 4)], digits[Int(byte & 0xf)]])
    }
}

private extension Unicode.Scalar {
    var isControl: Bool { properties.generalCategory == .control }
}
