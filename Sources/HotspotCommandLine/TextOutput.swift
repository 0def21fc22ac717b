#if canImport(Glibc)
import Glibc
#endif

/// Writes `text` to `descriptor` at once, unbuffered (unlike `print`): whoever reads the
/// output sees each line as soon as it is written.
package func writeUnbuffered(_ text: String, to descriptor: Int32 = STDOUT_FILENO) {
    var bytes = Array(text.utf8)[...]
    while !bytes.isEmpty {
        let written = bytes.withUnsafeBytes { write(descriptor, $0.baseAddress, $0.count) }
        if written < 0, errno == EINTR { continue }
        guard written > 0 else { return }
        bytes = bytes.dropFirst(written)
    }
}

extension String {
    /// The text followed by spaces up to `width` characters: a column of a table.
    package func padded(to width: Int) -> String {
        self + String(repeating: " ", count: max(0, width - count))
    }
}
