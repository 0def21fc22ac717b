/// The six commands of the hotspot-helper model (docs/HOTSPOT-MODEL.md).
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

    /// Why this result may not answer `command`, or nil when it may.
    public func ruleBroken(answering command: HotspotCommand) -> String? {
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

/// The states of one network.
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
    /// The probes `cmd:probe()` and the check of a helper's success run; empty means the
    /// well-known Apple, Google and Firefox ones.
    public var probes: [Probe]
    /// The network's RFC 8908 Captive Portal API URI (from DHCP option 114 or the
    /// configuration), or nil when it has none.
    public var captivePortalAPI: String?
    /// Whether `captivePortalAPI` came from the link itself (DHCP option 114, a router
    /// advertisement): then plain HTTP is accepted, as gateways ship it (HOTSPOT-MODEL.md).
    public var captivePortalAPIIsFromLink: Bool

    public init(ssid: String, bssid: String = "", signalStrength: Double = 1, isSecure: Bool = false,
                didAutoJoin: Bool = false, interface: String? = nil, resolvers: [String] = [], probes: [Probe] = [],
                captivePortalAPI: String? = nil, captivePortalAPIIsFromLink: Bool = false) {
        self.ssid = ssid
        self.bssid = bssid
        self.signalStrength = signalStrength
        self.isSecure = isSecure
        self.didAutoJoin = didAutoJoin
        self.interface = interface
        self.resolvers = resolvers
        self.probes = probes
        self.captivePortalAPI = captivePortalAPI
        self.captivePortalAPIIsFromLink = captivePortalAPIIsFromLink
    }

    /// Whether the Captive Portal API may be plain HTTP: from the link, or when the
    /// configuration allows it (`--capport-allow-http`).
    public func allowsPlainHTTPCaptivePortalAPI(configured: Bool) -> Bool {
        configured || captivePortalAPIIsFromLink
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

    public init(ssid: String, bssid: String?, helper: String, displayName: String, password: String?) {
        self.ssid = ssid
        self.bssid = bssid
        self.helper = helper
        self.displayName = displayName
        self.password = password
    }
}

/// A network of the scan list a helper answered with, and the password it set.
public struct ScannedNetwork: Sendable, Equatable {
    public let ssid: String
    public let bssid: String?
    public let password: String?

    public init(ssid: String, bssid: String? = nil, password: String? = nil) {
        self.ssid = ssid
        self.bssid = bssid
        self.password = password
    }
}

/// What a helper answered to one command.
public struct HelperResponse: Sendable, Equatable {
    public var result: CommandResult
    /// For evaluate: the confidence set on the network the response carries.
    public var confidence: Confidence
    public var claims: [ScannedNetwork]
    public var error: String?
    /// For `ui_required`: what to ask the person, when the helper says.
    public var questions: PersonQuestions?

    public init(result: CommandResult, confidence: Confidence = .none, claims: [ScannedNetwork] = [], error: String? = nil,
                questions: PersonQuestions? = nil) {
        self.result = result
        self.confidence = confidence
        self.claims = claims
        self.error = error
        self.questions = questions
    }

    public static func failure(_ error: String) -> HelperResponse {
        HelperResponse(result: .failure, error: error)
    }

    /// The helper has no handler for the command.
    public static let notRecognized = HelperResponse(result: .commandNotRecognized)

    /// The response as the model allows it for `command`: a result not valid for the
    /// command becomes a failure saying why, and only a success carries a confidence.
    public func checked(answering command: HotspotCommand) -> HelperResponse {
        if let broken = result.ruleBroken(answering: command) {
            return .failure("result '\(result.rawValue)' is not valid for \(command.rawValue): \(broken)")
        }
        var checked = self
        if result != .success { checked.confidence = .none }
        if result != .uiRequired { checked.questions = nil }
        return checked
    }
}

/// What the runtime remembers across restarts, apart from the helpers' stores. Networks are
/// told apart by their SSIDs' bytes (`BySSID`, `SSIDSet`).
public struct PersistentState: Codable, Sendable, Equatable {
    /// The helper that authenticated each network (by SSID).
    public var chosenHelpers: BySSID<String> = [:]
    /// Helpers excluded from a network after answering `unsupported_network`.
    public var exclusions: BySSID<Set<String>> = [:]
    /// Networks whose auto-join was disabled by a `failure`.
    public var autoJoinDisabled: SSIDSet = []
    /// Helpers the user switched off everywhere.
    public var disabledHelpers: Set<String> = []
    /// Helpers the user switched off for one SSID.
    public var disabledForNetwork: BySSID<Set<String>> = [:]

    public init() {}

    /// The helpers not to ask about `ssid`: switched off everywhere or for it, or excluded
    /// from it. Usually none.
    public func helpersOff(for ssid: String) -> Set<String> {
        disabledHelpers.union(disabledForNetwork[ssid] ?? []).union(exclusions[ssid] ?? [])
    }
}

/// What a connectivity check concluded about a network.
public enum ConnectivityState: String, Sendable, Codable {
    case connected
    case connectedWithoutInternet = "connected_without_internet"
    case captive, partial, determining
    case notConnected = "not_connected"
}

/// What kind of link an interface is, as a `connected_without_internet` verdict names it.
public enum InterfaceKind: String, Sendable, Codable {
    case wifi, ethernet, cellular
    /// The machine's own loopback (`lo`).
    case loopback
    /// A link with no device under it: a veth pair, a bridge, a tunnel.
    case virtual
}
