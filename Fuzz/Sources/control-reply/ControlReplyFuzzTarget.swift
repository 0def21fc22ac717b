#if canImport(Glibc)
import Glibc
#endif
import FoundationEssentials
import FuzzSupport
@testable import HotspotControl

/// What a daemon (or whatever answers on its socket) sends the control client, read as
/// `status`, `ui` and the person's page read a reply, and as `watch` reads events. A line
/// read is within its limit and holds no newline; a reply read encodes and reads back the
/// same; the lines of the watch stream are the stream's bytes up to their newlines.
@main enum ControlReplyFuzzTarget {
    /// Small, so inputs reach the "too large" ending too.
    static let limit = 512

    static func main() {
        fuzz { bytes in
            let reading = stream(bytes)
            defer { close(reading) }
            switch ControlServer.readLine(reading, limit: limit) {
            case .line(let line):
                require(line.count <= limit, "a line over the limit was read")
                require(!line.contains(UInt8(ascii: "\n")), "a line holds a newline")
                require(bytes.starts(with: line + [UInt8(ascii: "\n")]), "the line is not the stream's start")
                if let reply = try? JSONDecoder().decode(ControlReply.self, from: Data(line)) {
                    let encoded = ControlServer.encoded(reply)
                    require((try? JSONDecoder().decode(ControlReply.self, from: Data(encoded.dropLast()))) == reply,
                            "a reply encoded reads back otherwise")
                }
            case .closed(let partial):
                require(partial == bytes.count && !bytes.contains(UInt8(ascii: "\n")), "closed early after \(partial) bytes")
            case .tooLarge:
                require((bytes.firstIndex(of: UInt8(ascii: "\n")) ?? bytes.count) > limit, "a line within the limit was too large")
            case .timedOut, .failed:
                require(false, "a socket pair failed to be read")
            }

            let watched = stream(bytes)
            defer { close(watched) }
            var reader = LineReader(descriptor: watched)
            var lines: [UInt8] = []
            while let line = reader.next() { lines += line + [UInt8(ascii: "\n")] }
            require(bytes.starts(with: lines), "the watch stream's lines are not its bytes")
        }
    }

    /// A socket whose peer wrote `bytes` and closed (an input fits in the socket's buffer).
    static func stream(_ bytes: [UInt8]) -> Int32 {
        var pair: [Int32] = [0, 0]
        require(socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0, &pair) == 0, "no socket pair")
        var size = Int32(max(bytes.count, 1) * 2 + 4096)
        setsockopt(pair[1], SOL_SOCKET, SO_SNDBUF, &size, socklen_t(MemoryLayout<Int32>.size))
        require(ControlServer.writeAll(pair[1], bytes), "the input did not fit the socket")
        close(pair[1])
        return pair[0]
    }
}
