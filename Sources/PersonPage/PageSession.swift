import Synchronization

/// The secrets of one run of the page: the token that admits a person (printed in the
/// address) and the CSRF token the page sends with every change; the port, for the Host and
/// Origin checks.
final class PageSession: Sendable {
    let token = PageSession.randomToken()
    let csrfToken = PageSession.randomToken()
    private let listeningPort = Atomic<Int>(0)

    var port: Int {
        get { listeningPort.load(ordering: .relaxed) }
        set { listeningPort.store(newValue, ordering: .relaxed) }
    }

    static let cookieName = "hh_session"

    /// The Host headers the page answers: its loopback address and port (a name that
    /// resolves to loopback, as DNS rebinding makes one, is refused).
    func admitsHost(_ authority: String?) -> Bool {
        guard let authority else { return false }
        return ["127.0.0.1:\(port)", "localhost:\(port)", "[::1]:\(port)"].contains(authority.lowercased())
    }

    /// Whether `origin` is the page's own, for a request that comes with `authority`.
    func isOwnOrigin(_ origin: String?, authority: String?) -> Bool {
        guard let origin, let authority, admitsHost(authority) else { return false }
        return origin.lowercased() == "http://" + authority.lowercased()
    }

    /// Compares in time that does not depend on where the strings differ.
    static func matches(_ given: String?, _ expected: String) -> Bool {
        guard let given else { return false }
        let a = Array(given.utf8), b = Array(expected.utf8)
        guard a.count == b.count else { return false }
        return zip(a, b).reduce(0) { $0 | ($1.0 ^ $1.1) } == 0
    }

    /// 128 random bits in hex.
    static func randomToken() -> String {
        var generator = SystemRandomNumberGenerator()
        return (0..<2).map { _ in
            let hex = String(generator.next() as UInt64, radix: 16)
            return String(repeating: "0", count: 16 - hex.count) + hex
        }.joined()
    }
}
