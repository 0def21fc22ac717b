import Locking
import Synchronization

/// What one running portal remembers. Clients are keyed by IP address, as real portals key
/// on the device: connectivity probes carry no cookies.
final class PortalState: Sendable {
    private let clients = PlainLock<[String: Client]>([:])
    /// `credentials`: the CSRF token of each session cookie its login page handed out.
    private let csrfTokens = PlainLock<[String: String]>([:])
    private let stopping = Atomic<Bool>(false)

    /// Set when the portal stops, so endless bodies (`/drip`, `/huge`) end and let the
    /// server shut down.
    var isStopping: Bool { stopping.load(ordering: .relaxed) }

    func beginStopping() { stopping.store(true, ordering: .relaxed) }

    /// Forgets every client and session, as if the portal had just started.
    func forgetClients() {
        clients.withLock { $0 = [:] }
        csrfTokens.withLock { $0 = [:] }
    }

    /// Reads or changes one client's record atomically.
    func withClient<Result>(_ address: String, _ body: (inout Client) -> Result) -> Result {
        clients.withLock { body(&$0[address, default: Client()]) }
    }

    func isLoggedIn(_ address: String, at now: Duration) -> Bool {
        withClient(address) { $0.isLoggedIn(at: now) }
    }

    func logOut(_ address: String) {
        withClient(address) { $0.login = .none }
    }

    func csrfToken(forCookie cookie: String) -> String? {
        csrfTokens.withLock { $0[cookie] }
    }

    func setCSRFToken(_ token: String, forCookie cookie: String) {
        csrfTokens.withLock { $0[cookie] = token }
    }
}

/// One client's record.
struct Client {
    enum Login: Equatable {
        case none
        case untilLogoff
        case until(Duration)
    }

    var login = Login.none
    /// `flaky`: logins refused so far.
    var refusedLogins = 0
    /// `rate-limited`: when the previous login attempt came.
    var previousLoginAttempt: Duration?
    /// `redirect-chain`: the ticket the auth host issued, which the login form must carry back.
    var ticket: String?
    /// `wispr`: when a pending (201) login completes.
    var pendingLoginCompletes: Duration?
    /// `coovachilli` and `mikrotik`: the challenge its next login answers.
    var chilliChallenge: [UInt8]?
    /// `pfsense`: the session its logout form names.
    var session: String?
    /// A replayed recording (`simulate --har`): how many of its steps the client has sent,
    /// and the fresh value it was given for each recorded token and cookie.
    var replayStepsDone = 0
    var replayValues: [String: String] = [:]

    func isLoggedIn(at now: Duration) -> Bool {
        switch login {
        case .none: false
        case .untilLogoff: true
        case .until(let end): now < end
        }
    }

    /// Time left of a login that runs out, nil for none or one that lasts until logoff.
    func remaining(at now: Duration) -> Duration? {
        guard case .until(let end) = login, now < end else { return nil }
        return end - now
    }

    /// Logs in for `length` from `now` (until logoff when nil); a login while logged in
    /// starts the length afresh.
    mutating func logIn(for length: Duration?, at now: Duration) {
        login = length.map { .until(now + $0) } ?? .untilLogoff
    }
}
