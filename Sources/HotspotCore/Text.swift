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
