public import FoundationEssentials
public import HotspotNetwork

/// The six commands of the hotspot-helper model.
public enum HotspotCommand: String, Sendable, Codable, CaseIterable {
    case filterScanList = "filter_scan_list"
    case evaluate
    case authenticate
    case presentUI = "present_ui"
    case maintain
    case logoff
}

public enum CommandResult: String, Sendable, Codable, CaseIterable {
    case success
    case failure
    case uiRequired = "ui_required"
    case commandNotRecognized = "command_not_recognized"
    case authenticationRequired = "authentication_required"
    case unsupportedNetwork = "unsupported_network"
    case temporaryFailure = "temporary_failure"

    /// Why this result may not answer `command`, or nil when it may (hotspot-model.md).
    func ruleBroken(answering command: HotspotCommand) -> String? {
        switch self {
        case .uiRequired where command != .authenticate:
            "ui_required is valid only for authenticate"
        case .authenticationRequired where command != .maintain:
            "authentication_required is valid only for maintain"
        case .unsupportedNetwork where command != .authenticate && command != .presentUI,
             .temporaryFailure where command != .authenticate && command != .presentUI:
            "\(rawValue) is valid only for authenticate and present_ui"
        default: nil
        }
    }
}

public enum Confidence: String, Sendable, Codable, Comparable, CaseIterable {
    case none, low, high

    public static func < (lhs: Confidence, rhs: Confidence) -> Bool {
        allCases.firstIndex(of: lhs)! < allCases.firstIndex(of: rhs)!
    }
}

/// The states of one network (hotspot-model.md).
public enum HotspotState: String, Sendable, Codable {
    case inactive
    case evaluating
    case authenticating
    case presentingUI = "presenting_ui"
    case authenticated
    case maintaining
    case loggingOff = "logging_off"
    case failure
}

/// A Wi-Fi network as the device sees it.
public struct NetworkDescription: Sendable, Hashable {
    public var ssid: String
    public var bssid: String
    /// 0.0 to 1.0.
    public var signalStrength: Double
    public var isSecure: Bool
    public var didAutoJoin: Bool
    /// The interface the network's traffic leaves by, when it is not the default route's.
    public var interface: String?
    /// The network's own DNS resolvers (`address` or `address:port`), asked through
    /// `interface`; empty means the system's resolver.
    public var resolvers: [String]
    /// The URLs `cmd:probe()` checks; empty means the well-known Apple, Google and Firefox ones.
    public var probeURLs: [String]
    /// The network's RFC 8908 Captive Portal API URI (from DHCP option 114 or the
    /// configuration), or nil when it has none.
    public var captivePortalAPI: String?

    public init(ssid: String, bssid: String = "", signalStrength: Double = 1, isSecure: Bool = false,
                didAutoJoin: Bool = false, interface: String? = nil, resolvers: [String] = [], probeURLs: [String] = [],
                captivePortalAPI: String? = nil) {
        self.ssid = ssid
        self.bssid = bssid
        self.signalStrength = signalStrength
        self.isSecure = isSecure
        self.didAutoJoin = didAutoJoin
        self.interface = interface
        self.resolvers = resolvers
        self.probeURLs = probeURLs
        self.captivePortalAPI = captivePortalAPI
    }
}

/// A network a helper claims in `filter_scan_list`.
public struct NetworkClaim: Sendable, Hashable, Codable {
    public let ssid: String
    public let bssid: String?
    public let helper: String
    /// The helper's display name, shown beside the network.
    public let displayName: String
    public let password: String?
}

/// A network of the scan list a helper answered with, and the password it set.
public struct ScannedNetwork: Sendable, Equatable {
    public let ssid: String
    public let bssid: String?
    public let password: String?
}

/// What a helper answered, after the runtime checked it against the model.
public struct HelperResponse: Sendable, Equatable {
    public var result: CommandResult
    /// For evaluate: the confidence set on the network the response carries.
    public var confidence: Confidence
    public var claims: [ScannedNetwork]
    public var error: String?
    /// New contents of `cmd.store` when the handler changed it.
    public var store: [String: String]?

    static func failure(_ error: String) -> HelperResponse {
        HelperResponse(result: .failure, confidence: .none, claims: [], error: error, store: nil)
    }
}

/// Everything the runtime reports: every command sent and every transition. The CLI and
/// the logs render this one type.
public struct HotspotEvent: Sendable, Codable, Equatable {
    public enum Kind: String, Sendable, Codable {
        /// A command and what its helper answered.
        case command
        /// A network changed state.
        case state
        /// A line a script logged, or a warning from the runtime.
        case log
        /// The last event of a `connect`, and of each run of `dev`.
        case done
        /// A connectivity verdict: a change the monitor saw, or the check after a helper's success.
        case connectivity
        /// Scripts were read again (a change on disk, SIGHUP): what changed, and what did
        /// not load (those keep their last good version).
        case reload
    }

    /// What a reload did, by helper id; problems as `file:line: message`.
    public struct ReloadSummary: Sendable, Codable, Equatable {
        public var added: [String]
        public var reloaded: [String]
        public var removed: [String]
        public var problems: [String]

        public init(_ change: HelperCatalog.Change) {
            added = change.added
            reloaded = change.reloaded
            removed = change.removed
            problems = change.problems.map(\.description)
        }
    }

    public var event: Kind
    public var time: Date
    public var network: String?
    public var command: HotspotCommand?
    public var helper: String?
    public var result: CommandResult?
    public var confidence: Confidence?
    /// Duration of the command in milliseconds.
    public var ms: Double?
    public var error: String?
    public var from: HotspotState?
    public var to: HotspotState?
    public var state: HotspotState?
    public var level: String?
    public var message: String?
    /// For `reload`: why the scripts were read again (`SIGHUP`, `changed on disk`), and what came of it.
    public var reason: String?
    public var reload: ReloadSummary?
    /// For `connectivity`: the verdict, where to log in, and the kind of the interface.
    public var verdict: ConnectivityVerdict.State?
    public var portalURL: String?
    public var interfaceKind: InterfaceKind?

    public init(event: Kind, time: Date = Date(), network: String? = nil, command: HotspotCommand? = nil,
                helper: String? = nil, result: CommandResult? = nil, confidence: Confidence? = nil,
                ms: Double? = nil, error: String? = nil, from: HotspotState? = nil, to: HotspotState? = nil,
                state: HotspotState? = nil, level: String? = nil, message: String? = nil,
                reason: String? = nil, reload: ReloadSummary? = nil) {
        self.event = event
        self.time = time
        self.network = network
        self.command = command
        self.helper = helper
        self.result = result
        self.confidence = confidence
        self.ms = ms
        self.error = error
        self.from = from
        self.to = to
        self.state = state
        self.level = level
        self.message = message
        self.reason = reason
        self.reload = reload
    }
}

extension HotspotEvent {
    /// A `connectivity` event for `verdict` on `network`; `helper` when the check followed its success.
    public init(connectivity verdict: ConnectivityVerdict, network: String?, helper: String? = nil, time: Date = Date()) {
        self.init(event: .connectivity, time: time, network: network, helper: helper)
        self.verdict = verdict.state
        self.portalURL = verdict.portalURL
        self.interfaceKind = verdict.interfaceKind
    }
}
