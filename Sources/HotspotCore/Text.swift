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
