#if canImport(Glibc)
import Glibc
#endif
import FoundationEssentials

/// Entries for systemd's journal through its native protocol: one datagram per entry to
/// the journal's socket, each field `NAME=value` on a line, or, for a value with a newline,
/// `NAME`, a newline, the value's length (64 bits, little-endian), the value and a newline.
/// Fields sent this way are the journal's own (`journalctl HH_NETWORK=...`), where a line
/// on standard output is one `MESSAGE`.
public final class JournalWriter: Sendable {
    public static let defaultSocketPath = "/run/systemd/journal/socket"
    /// Names another socket for the journal (tests listen on their own).
    public static let socketEnvironmentVariable = "HOTSPOT_HELPER_JOURNAL_SOCKET"

    /// A field of an entry; names are upper-case letters, digits and `_`, not starting with `_`.
    public typealias Field = (name: String, value: String)

    private let sender: UnixDatagramSender

    /// A writer when `descriptor` (the stream events would go to) is connected to the journal,
    /// as `JOURNAL_STREAM` ("device:inode" of the stream the service manager connected)
    /// says; nil otherwise, and the caller writes lines as before.
    public static func forStream(_ descriptor: Int32) -> JournalWriter? {
        let environment = ProcessInfo.processInfo.environment
        guard let stream = environment["JOURNAL_STREAM"], isStream(descriptor, named: stream) else { return nil }
        return JournalWriter(socketPath: environment[socketEnvironmentVariable] ?? defaultSocketPath)
    }

    /// Whether `descriptor`'s device and inode are those of `JOURNAL_STREAM` (`device:inode`).
    static func isStream(_ descriptor: Int32, named stream: String) -> Bool {
        let parts = stream.split(separator: ":")
        guard parts.count == 2, let device = UInt64(parts[0]), let inode = UInt64(parts[1]) else { return false }
        var status = stat()
        guard fstat(descriptor, &status) == 0 else { return false }
        return UInt64(status.st_dev) == device && UInt64(status.st_ino) == inode
    }

    public init?(socketPath: String) {
        guard let sender = UnixDatagramSender(path: socketPath) else { return nil }
        self.sender = sender
    }

    /// Sends one entry; false when the journal did not take it (not listening, or an entry
    /// too large for a datagram), so the caller can write it another way.
    public func send(_ fields: [Field]) -> Bool {
        sender.send(Self.encoded(fields))
    }

    /// An entry as the native protocol carries it.
    public static func encoded(_ fields: [Field]) -> [UInt8] {
        var entry: [UInt8] = []
        for (name, value) in fields {
            entry += name.utf8
            let bytes = Array(value.utf8)
            if bytes.contains(UInt8(ascii: "\n")) {
                entry.append(UInt8(ascii: "\n"))
                withUnsafeBytes(of: UInt64(bytes.count).littleEndian) { entry += $0 }
            } else {
                entry.append(UInt8(ascii: "="))
            }
            entry += bytes
            entry.append(UInt8(ascii: "\n"))
        }
        return entry
    }
}
