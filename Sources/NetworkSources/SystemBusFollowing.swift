#if canImport(Glibc)
import Glibc
#endif
import Dispatch
import DBusClient
import LinuxFiles

/// How a source follows a manager on the system bus from its own thread: connects, follows
/// until stopped, and connects again after the connection ends or cannot be made, waiting
/// from 1 s up to 30 s between attempts, saying so once rather than at every attempt.
enum SystemBusFollowing {
    static let firstRetryDelay: Duration = .seconds(1)
    static let longestRetryDelay: Duration = .seconds(30)

    /// A source's stream of events, `follow` running on a thread of its own (sd-bus is used
    /// from one thread, and its waits never hold one of Swift concurrency's) until the stream
    /// ends or `wakeUp` is woken.
    static func start(_ label: String, wakeUp: WakeUpPipe,
                      _ follow: @escaping @Sendable (AsyncStream<NetworkSourceEvent>.Continuation) -> Void) -> AsyncStream<NetworkSourceEvent> {
        let (events, continuation) = AsyncStream.makeStream(of: NetworkSourceEvent.self)
        continuation.onTermination = { _ in wakeUp.wake() }
        DispatchQueue(label: label).async {
            follow(continuation)
            continuation.finish()
            wakeUp.close()
        }
        return events
    }

    /// Returns once `wakeUp` is woken. `follow` returns when woken too, and throws when the
    /// connection ends.
    static func run<Connection>(_ manager: String, until wakeUp: WakeUpPipe, events: AsyncStream<NetworkSourceEvent>.Continuation,
                                connect: () throws(BusError) -> Connection, follow: (Connection) throws(BusError) -> Void) {
        var delay = firstRetryDelay
        var failing = false  // said already, until a connection works again
        while true {
            do {
                let connection = try connect()
                if failing { events.yield(.note(.info, "the system bus is back")) }
                failing = false
                delay = firstRetryDelay
                try follow(connection)
                return
            } catch {
                if !failing {
                    let address = getenv("DBUS_SYSTEM_BUS_ADDRESS").map { String(cString: $0) } ?? "the standard system bus"
                    events.yield(.note(.warn, "\(manager) cannot be followed: \(error) (\(address)); trying again in "
                                           + "\(firstRetryDelay.components.seconds) s, then less and less often, "
                                           + "every \(longestRetryDelay.components.seconds) s at most"))
                }
                failing = true
            }
            var nothing: [pollfd] = []
            guard wakeUp.wait(for: &nothing, timeoutMilliseconds: Int32(delay / .milliseconds(1))) == .timedOut else { return }
            delay = min(delay * 2, longestRetryDelay)
        }
    }

    /// Follows `connection`'s manager until `wakeUp` is woken (throws when the connection
    /// ends): each view of it that changed, or is due a look again, becomes the daemon's events
    /// through `report`, what the daemon was told before and after. `turn` runs once a turn,
    /// for what the source does besides, and `news` wakes a turn for it.
    static func follow(_ connection: some ManagerConnection, on bus: SystemBus, report: inout ManagerReport, until wakeUp: WakeUpPipe,
                       events: AsyncStream<NetworkSourceEvent>.Continuation, news: WakeUpPipe? = nil,
                       turn: () -> Void = {}) throws(BusError) {
        if connection.owner == nil {
            events.yield(.note(.warn, "\(report.manager) is not on the system bus; its \(type(of: connection).things) are followed once it is"))
        } else {
            connection.managerCame()
        }
        while true {
            try bus.dispatchPending()
            if connection.owner == nil {
                report.managerLeft()
            } else if let view = connection.view(lookingAgain: report.nextLook.map({ $0 <= .now }) == true) {
                for event in report.events(toward: view) { events.yield(event) }
            }
            news?.drain()
            turn()
            guard try wait(on: bus, until: report.nextLook, or: wakeUp,
                           alsoWatching: news.map { pollfd(fd: $0.readEnd, events: Int16(POLLIN), revents: 0) }) else { return }
        }
    }

    /// Waits until the bus has work, `nextLook` comes, `other` is ready or `wakeUp` is woken;
    /// false once woken (or the wait failed): the source stops.
    static func wait(on bus: SystemBus, until nextLook: ContinuousClock.Instant?, or wakeUp: WakeUpPipe,
                     alsoWatching other: pollfd? = nil) throws(BusError) -> Bool {
        let request = try bus.waitRequest()
        var timeout = request.timeoutMilliseconds
        if let nextLook {
            let untilLook = Int32(clamping: Int(((nextLook - .now) / .milliseconds(1)).rounded(.up)))
            timeout = timeout < 0 ? max(0, untilLook) : min(timeout, max(0, untilLook))
        }
        var descriptors = [request.descriptor] + (other.map { [$0] } ?? [])
        switch wakeUp.wait(for: &descriptors, timeoutMilliseconds: timeout) {
        case .woken, .failed: return false
        case .ready, .timedOut: return true
        }
    }

    /// The unique name owning `name` on the bus, nil when none does.
    static func owner(of name: String, on bus: SystemBus) throws(BusError) -> String? {
        do {
            return try bus.call("org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus", "GetNameOwner", [.string(name)]).first?.string
        } catch let error where error.name == "org.freedesktop.DBus.Error.NameHasNoOwner" {
            return nil
        }
    }

    /// A manager's NameOwnerChanged, said in a note: `.some(nil)` when it left the bus,
    /// `.some(name)` when it came with that unique name (its `things` are read again); nil
    /// for a signal not of that shape.
    static func ownerChange(_ message: BusMessage, of manager: String, reading things: String,
                            events: AsyncStream<NetworkSourceEvent>.Continuation) -> String?? {
        guard let values = try? message.values(), values.count == 3, let newOwner = values[2].string else { return nil }
        if newOwner.isEmpty {
            events.yield(.note(.warn, "\(manager) left the system bus; its networks stay as they were until it is back"))
            return .some(nil)
        }
        events.yield(.note(.info, "\(manager) is on the system bus: reading its \(things)"))
        return .some(newOwner)
    }

    /// The match rule for `name` changing owners.
    static func ownerChangeRule(_ name: String) -> String {
        "type='signal',sender='org.freedesktop.DBus',path='/org/freedesktop/DBus',interface='org.freedesktop.DBus',"
            + "member='NameOwnerChanged',arg0='\(name)'"
    }
}

/// One connection to the system bus following a manager, made, used and closed on its source's
/// thread (as sd-bus requires), and driven by `SystemBusFollowing.follow`.
protocol ManagerConnection: AnyObject {
    /// What the manager's notes call what it manages: "devices", "services", "links".
    static var things: String { get }
    /// The manager's unique name while it is on the bus: only its signals and calls count.
    var owner: String? { get }
    /// The manager is on the bus as the following starts: it is to be read.
    func managerCame()
    /// What the manager says now, when that changed since the last view or `lookingAgain`;
    /// nil otherwise, or when it cannot be read (said why).
    func view(lookingAgain: Bool) -> ManagerView?
}
