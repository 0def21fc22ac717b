public import HotspotCore
public import HotspotNetwork
public import LuaSandbox

/// What the prelude keeps out of a script's reach for the host libraries that reach the
/// network (`cmd:http`, `cmd:probe`, `capport.fetch`, `cmd:tcp`, `cmd:udp`) and for
/// `cmd:secret`: the script's hosts, its secrets, the network's link, the runtime's settings.
/// The runtime encodes it (once per helper and link), the prelude adds the command's cookie
/// session and the portal's hosts, and the libraries decode it, all by the keys of `Key`.
///
/// Its own target because the runtime and the script libraries both need it, and neither
/// may depend on the other; LuaSandbox knows nothing of hotspots, HotspotNetwork nothing of
/// Lua. Foundation-free, as the libraries run inside the worker processes.
public struct HelperContext: Sendable, Equatable {
    /// The table's keys, named here only: the prelude gets them from the runtime.
    public enum Key: String, Sendable, CaseIterable {
        case hosts, secrets, helper, interface, resolvers, probes, session
        case caFile = "ca_file"
        case captivePortalAPI = "capport_url"
        case allowsPlainHTTPCaptivePortalAPI = "capport_allow_http"
        case followsPortal = "portal_hosts"
        case recordsExchanges = "record_exchanges"
    }

    /// The hosts the script may reach: its `hosts`, and the portal's that the prelude adds
    /// during a command when the script follows the portal.
    public var hosts: [HostPattern]
    /// The helper's section of the secrets file, for `cmd:secret`.
    public var secrets: [String: String]
    /// The helper's id, which with the session names its cookie jar.
    public var helper: String
    public var interface: String?
    public var resolvers: [String]
    /// The connectivity probes, in the compact syntax of `Probe.parse`.
    public var probes: [String]
    public var caFile: String?
    /// The network's RFC 8908 Captive Portal API.
    public var captivePortalAPI: String?
    public var allowsPlainHTTPCaptivePortalAPI: Bool
    /// Whether the script's `hosts` has "@portal".
    public var followsPortal: Bool
    /// The command's cookie session, which the prelude adds; nil in what the runtime sends.
    public var session: String?
    /// Whether the session's requests are kept for a recording of a failed attempt
    /// (`run --record-failures`), which the runtime asks for with the `exchanges` entry.
    public var recordsExchanges: Bool

    public init(hosts: [HostPattern], secrets: [String: String], helper: String, interface: String?,
                resolvers: [String], probes: [String], caFile: String?, captivePortalAPI: String?,
                allowsPlainHTTPCaptivePortalAPI: Bool, followsPortal: Bool, session: String? = nil, recordsExchanges: Bool = false) {
        self.hosts = hosts
        self.secrets = secrets
        self.helper = helper
        self.interface = interface
        self.resolvers = resolvers
        self.probes = probes
        self.caFile = caFile
        self.captivePortalAPI = captivePortalAPI
        self.allowsPlainHTTPCaptivePortalAPI = allowsPlainHTTPCaptivePortalAPI
        self.followsPortal = followsPortal
        self.session = session
        self.recordsExchanges = recordsExchanges
    }

    /// The table the prelude keeps. Empty lists and false flags are left out (decoding takes
    /// absent as empty or false): every command carries this table into the helper's state,
    /// where each key and value costs a string to intern.
    public var luaValue: LuaValue {
        var table = LuaTable()
        func set(_ key: Key, _ value: LuaValue) { table[key.rawValue] = value }
        func set(_ key: Key, _ text: String?) { if let text { set(key, .text(text)) } }
        func set(_ key: Key, _ items: [String]) { if !items.isEmpty { set(key, .table(LuaTable(array: items.map(LuaValue.text)))) } }
        func set(_ key: Key, _ flag: Bool) { if flag { set(key, .boolean(true)) } }
        set(.hosts, hosts.map(\.text))
        if !secrets.isEmpty {
            set(.secrets, .table(LuaTable(Dictionary(uniqueKeysWithValues: secrets.map { (LuaValue.text($0.key), LuaValue.text($0.value)) }))))
        }
        set(.helper, helper)
        set(.interface, interface)
        set(.resolvers, resolvers)
        set(.probes, probes)
        set(.caFile, caFile)
        set(.captivePortalAPI, captivePortalAPI)
        set(.allowsPlainHTTPCaptivePortalAPI, allowsPlainHTTPCaptivePortalAPI)
        set(.followsPortal, followsPortal)
        set(.session, session)
        set(.recordsExchanges, recordsExchanges)
        return .table(table)
    }

    /// The context the prelude passed. The script's own hosts were checked when it loaded;
    /// a portal's host that is no valid pattern (an IPv6 address, which URLs give without
    /// brackets, or a name with an underscore) is left out, so requests to it are refused.
    public init(_ table: LuaTable) {
        func value(_ key: Key) -> LuaValue { table[key.rawValue] }
        func text(_ key: Key) -> String? { value(key).stringValue }
        func list(_ key: Key) -> [String] { (value(key).tableValue?.array ?? []).compactMap(\.stringValue) }
        self.init(
            hosts: list(.hosts).compactMap { try? HostPattern.parse($0).get() },
            secrets: Dictionary(uniqueKeysWithValues: (value(.secrets).tableValue?.entries ?? [:]).compactMap { key, value in
                key.stringValue.flatMap { key in value.stringValue.map { (key, $0) } }
            }),
            helper: text(.helper) ?? "", interface: text(.interface), resolvers: list(.resolvers), probes: list(.probes),
            caFile: text(.caFile), captivePortalAPI: text(.captivePortalAPI),
            allowsPlainHTTPCaptivePortalAPI: value(.allowsPlainHTTPCaptivePortalAPI).booleanValue ?? false,
            followsPortal: value(.followsPortal).booleanValue ?? false, session: text(.session),
            recordsExchanges: value(.recordsExchanges).booleanValue ?? false)
    }

    /// The network binding the context's requests and sockets use.
    public var binding: NetworkBinding { NetworkBinding(interface: interface, resolvers: resolvers, caFile: caFile) }
}
