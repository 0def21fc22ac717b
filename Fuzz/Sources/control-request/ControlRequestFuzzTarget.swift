import FoundationEssentials
import FuzzSupport
@testable import HotspotControl

/// A line sent to the daemon's control socket, read as its request. A request read, written
/// as the client writes it, reads back the same.
@main enum ControlRequestFuzzTarget {
    static func main() {
        fuzz { line in
            guard let request = try? ControlRequest(line: line) else { return }
            guard let encoded = try? JSONEncoder().encode(request) else { fatalError("the request does not encode") }
            require((try? ControlRequest(line: Array(encoded))) == request, "the request encoded reads back otherwise")
        }
    }
}
