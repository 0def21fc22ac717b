import DBusClient
import HotspotCore
import LinuxFiles
import Locking

/// `--source connman`: the services ConnMan connects, followed on the system bus. A service
/// ready or online is a network joined (a Wi-Fi service by its SSID, any other by ConnMan's
/// name for it, "Wired" for ethernet), with its interface and name servers; one that goes idle,
/// fails or disconnects is left. Its Wi-Fi services are the scan list. Debian 12's ConnMan
/// (1.41) never goes online when its check's answer has a body, a portal's page too, so "ready
/// and not online" is no verdict: the daemon probes.
///
/// The source is ConnMan's agent (`RegisterAgent`): `RequestBrowser(service, url)`, ConnMan's
/// word that a portal wants a person, is taken as a captive verdict, and answered once the
/// helpers are done with the network (a login, or a refusal when none logged in);
/// `RequestInput` gets the passphrase a helper supplied for the service's SSID, and anything
/// else is refused. Only ConnMan's calls are answered.
public final class ConnManSource: NetworkSource {
    /// The one interface followed; nil for every one.
    public let interface: String?
    private let isAgent: Bool
    private let passwords = PlainLock<[String: String]>([:])
    /// The networks the helpers are done with, since the source's thread last looked.
    private let finished = PlainLock<[(ssid: String, authenticated: Bool)]>([])
    private let wakeUp = WakeUpPipe()
    private let news = WakeUpPipe()

    /// - Parameter isAgent: whether to register as ConnMan's agent (the daemon does).
    public init(interface: String? = nil, isAgent: Bool = true) {
        self.interface = interface
        self.isAgent = isAgent
    }

    public var description: String { "connman" + (interface.map { ":" + $0 } ?? "") }
    public var reportsConnectivity: Bool { false }

    public func start() -> AsyncStream<NetworkSourceEvent> {
        SystemBusFollowing.start("connman-source", wakeUp: wakeUp) { events in
            var report = ManagerReport(manager: "ConnMan", nameServerGrace: .seconds(1))
            SystemBusFollowing.run("ConnMan", until: self.wakeUp, events: events) { () throws(BusError) in
                try ConnManConnection(only: self.interface, isAgent: self.isAgent, passwords: { self.passwords.withLock { $0 } }, events: events)
            } follow: { connection throws(BusError) in
                // The helpers done with a network: ConnMan's RequestBrowser calls for it are answered.
                try SystemBusFollowing.follow(connection, on: connection.bus, report: &report, until: self.wakeUp, events: events,
                                              news: self.news) {
                    let finished = self.finished.withLock { finished in
                        defer { finished = [] }
                        return finished
                    }
                    for (ssid, authenticated) in finished { connection.answerBrowserRequests(for: ssid, authenticated: authenticated) }
                }
            }
            self.news.close()
        }
    }

    public func supplyPasswords(_ passwords: [String: String]) {
        self.passwords.withLock { $0 = passwords }
    }

    public func helpersFinished(with ssid: String, authenticated: Bool) {
        finished.withLock { $0.append((ssid, authenticated)) }
        news.wake()
    }

    public func stop() { wakeUp.wake() }
}

/// One connection to the system bus, following ConnMan on it, on the source's thread.
private final class ConnManConnection: ManagerConnection {
    static let things = "services"
    let bus: SystemBus
    private let only: String?
    private let isAgent: Bool
    private let passwords: () -> [String: String]
    private let events: AsyncStream<NetworkSourceEvent>.Continuation
    private var services = ConnManServices()
    private(set) var owner: String?
    private var needsLoading = false
    private var servicesChanged = false
    /// The ConnMan the agent registered with, by unique name.
    private var agentRegisteredWith: String?
    /// RequestBrowser calls waiting for the helpers, by SSID.
    private var browserRequests: [String: [KeptCall]] = [:]

    init(only: String?, isAgent: Bool, passwords: @escaping () -> [String: String],
         events: AsyncStream<NetworkSourceEvent>.Continuation) throws(BusError) {
        bus = try SystemBus()
        self.only = only
        self.isAgent = isAgent
        self.passwords = passwords
        self.events = events
        try bus.addMatch(SystemBusFollowing.ownerChangeRule(ConnManAPI.busName)) { [unowned self] in ownerChanged($0) }
        try bus.addMatch("type='signal',sender='\(ConnManAPI.busName)'") { [unowned self] in signal($0) }
        if isAgent {
            try bus.addObject(at: ConnManAPI.agentPath) { [unowned self] in answerAgentCall($0) }
        }
        owner = try SystemBusFollowing.owner(of: ConnManAPI.busName, on: bus)
    }

    func managerCame() { needsLoading = true }

    func view(lookingAgain: Bool) -> ManagerView? {
        if needsLoading { load() }
        guard servicesChanged || lookingAgain else { return nil }
        servicesChanged = false
        return ManagerView(services, only: only)
    }

    /// Reads every service, and registers the agent.
    private func load() {
        needsLoading = false
        do {
            let answer = try bus.call(ConnManAPI.busName, ConnManAPI.managerPath, ConnManAPI.manager, "GetServices")
            var loaded = ConnManServices()
            guard let listed = answer.first, loaded.apply(listed) else {
                events.yield(.note(.warn, "ConnMan answered GetServices with \(answer.first?.kind ?? "nothing"), not its services"))
                return
            }
            services = loaded
            servicesChanged = true
        } catch {
            events.yield(.note(.warn, "cannot read ConnMan's services: \(error)"))
            return
        }
        guard isAgent, let owner, agentRegisteredWith != owner else { return }
        do {
            _ = try bus.call(ConnManAPI.busName, ConnManAPI.managerPath, ConnManAPI.manager, "RegisterAgent", [.objectPath(ConnManAPI.agentPath)])
            agentRegisteredWith = owner
        } catch {
            events.yield(.note(.warn, "cannot register as ConnMan's agent: \(error); its portals and passphrase requests do not reach the helpers"))
        }
    }

    private func ownerChanged(_ message: BusMessage) {
        guard let change = SystemBusFollowing.ownerChange(message, of: "ConnMan", reading: Self.things, events: events) else { return }
        owner = change
        browserRequests = [:]  // the ConnMan that asked is gone, or another took its name
        if change == nil { services.removeAll() } else { needsLoading = true }
    }

    /// Keeps the mirror current from one of ConnMan's signals.
    private func signal(_ message: BusMessage) {
        guard let owner, message.sender == owner, let path = message.path, let values = try? message.values() else { return }
        switch (message.interface, message.member) {
        case (ConnManAPI.manager, "ServicesChanged"):
            guard values.count == 2, let removed = values[1].elements?.compactMap({ value -> String? in
                if case .objectPath(let path) = value { path } else { nil }
            }), services.apply(values[0], removed: removed) else {
                events.yield(.note(.warn, "ConnMan sent ServicesChanged of \(values.map(\.signature).joined()), not (a(oa{sv})ao); services read again"))
                needsLoading = true
                return
            }
        case (ConnManAPI.service, "PropertyChanged"):
            guard values.count == 2, let name = values[0].string else { return }
            services.change(path, name: name, values[1])
        default:
            return
        }
        servicesChanged = true
    }

    /// A call to the agent: from ConnMan only.
    private func answerAgentCall(_ call: BusMessage) -> Bool {
        guard call.interface == ConnManAPI.agent else { return false }
        guard let owner, call.sender == owner else {
            bus.replyError(to: call, name: "org.freedesktop.DBus.Error.AccessDenied", message: "only ConnMan may call hotspot-helper's agent")
            return true
        }
        let values = (try? call.values()) ?? []
        switch call.member {
        case "RequestBrowser":
            guard values.count == 2, case .objectPath(let service) = values[0], let url = values[1].string else {
                bus.replyError(to: call, name: "org.freedesktop.DBus.Error.InvalidArgs", message: "RequestBrowser takes (o, s)")
                return true
            }
            guard let ssid = services.name(of: service) else {
                bus.replyError(to: call, name: ConnManAPI.canceled, message: "hotspot-helper knows no service \(service)")
                events.yield(.note(.info, "ConnMan asked for a browser for \(service), which it did not list: refused"))
                return true
            }
            browserRequests[ssid, default: []].append(KeptCall(call))
            events.yield(.note(.info, "ConnMan found a portal on \(ssid)\(url.isEmpty ? "" : " (\(url))"): the helpers log in, then ConnMan is answered"))
            events.yield(.connectivity(ssid: ssid, .captive))
        case "RequestInput":
            guard values.count == 2, case .objectPath(let service) = values[0] else {
                bus.replyError(to: call, name: "org.freedesktop.DBus.Error.InvalidArgs", message: "RequestInput takes (o, a{sv})")
                return true
            }
            switch ConnManInputAnswer(fields: values[1], ssid: services.name(of: service), passwords: passwords()) {
            case .input(let input, let ssid):
                do {
                    try bus.reply(to: call, [input])
                    events.yield(.note(.info, "gave ConnMan the password a helper supplied for \(ssid)"))
                } catch {
                    events.yield(.note(.warn, "cannot give ConnMan the password for \(ssid): \(error)"))
                }
            case .refused(let reason):
                bus.replyError(to: call, name: ConnManAPI.canceled, message: reason)
                events.yield(.note(.info, "ConnMan asked for input: \(reason)"))
            }
        case "ReportError":
            if values.count == 2, case .objectPath(let service) = values[0], let error = values[1].string {
                events.yield(.note(.warn, "ConnMan reports \(error) on \(services.name(of: service) ?? service)"))
            }
            try? bus.reply(to: call, [])
        case "Release":
            agentRegisteredWith = nil
            try? bus.reply(to: call, [])
        case "Cancel":
            browserRequests = [:]  // ConnMan gave up waiting: the calls are dropped unanswered
            try? bus.reply(to: call, [])
        default:
            return false
        }
        return true
    }

    /// The helpers are done with `ssid`: ConnMan's RequestBrowser calls for it are answered,
    /// with success when a helper logged in, else Canceled.
    func answerBrowserRequests(for ssid: String, authenticated: Bool) {
        guard let calls = browserRequests.removeValue(forKey: ssid) else { return }
        for call in calls {
            if authenticated {
                try? bus.reply(to: call.message, [])
            } else {
                bus.replyError(to: call.message, name: ConnManAPI.canceled, message: "no helper logged in to \(ssid)")
            }
        }
        events.yield(.note(.info, "answered ConnMan's portal request for \(ssid): \(authenticated ? "logged in" : "no helper logged in")"))
    }
}
