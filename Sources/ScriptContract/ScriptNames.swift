import HotspotCore
public import LuaSandbox

/// The names the runtime, the trusted prelude and the script libraries share, declared here
/// only. The Swift side uses these cases; the prelude gets them in its `CONTRACT` table,
/// written from these cases (`luaTable`) by the name of each case, so a wire name changes
/// here alone, and a name the prelude reads that no case declares fails when it loads.
/// The handlers a script may define, the results it may answer and the confidences it may
/// set are HotspotCore's `HotspotCommand`, `CommandResult` and `Confidence`; the context's
/// keys are `HelperContext.Key`.
public enum ScriptNames {
    /// The prelude's entries the runtime calls in a helper's state.
    public enum Entry: String, Sendable, CaseIterable {
        /// Runs a command's handler: `dispatch(helperTable, commandTable)`, answering `Answer`.
        case dispatch
        /// Describes what a script returned (`Description`), when it loads.
        case describe
        /// Hands over the requests the helper's session made and were kept for a recording
        /// (`exchanges(helperTable, commandTable)`: a list of `ExchangeKey` tables), emptying it.
        case exchanges
    }

    /// One request and its response in what `exchanges` returns.
    public enum ExchangeKey: String, Sendable, CaseIterable {
        case started, method, url, status, milliseconds, failure
        case requestHeaders = "request_headers"
        case requestBody = "request_body"
        case responseHeaders = "response_headers"
        case responseBody = "response_body"
    }

    /// The helper's own part of a command.
    public enum HelperKey: String, Sendable, CaseIterable {
        case context, store
    }

    /// The part of a command every helper it goes to gets alike; the script's `cmd` has
    /// the same fields but `session`.
    public enum CommandKey: String, Sendable, CaseIterable {
        case type, session, network, answers
        case networkList = "network_list"
    }

    /// A network's table: `cmd.network` and the entries of `cmd.network_list`.
    public enum NetworkKey: String, Sendable, CaseIterable {
        case ssid, bssid
        case signalStrength = "signal_strength"
        case isSecure = "is_secure"
        case didAutoJoin = "did_auto_join"
        case didJustJoin = "did_just_join"
        case isChosenHelper = "is_chosen_helper"
    }

    /// A network a `filter_scan_list` response claims, in the answer's `claims`.
    public enum ClaimKey: String, Sendable, CaseIterable {
        case ssid, bssid, password, confidence
    }

    /// What `dispatch` returns, as plain values in this order (the cheapest to carry back):
    /// the result's name, an error message, the network's confidence (evaluate), the
    /// networks claimed (filter_scan_list, each a table of `ClaimKey`), the helper's store
    /// when the handler changed it, and the questions for a person (ui_required).
    public enum Answer: Int, Sendable, CaseIterable {
        case result, error, confidence, claims, store, questions
    }

    /// The fields a script's returned table may have besides its handlers.
    public enum ScriptField: String, Sendable, CaseIterable {
        case name, hosts, ui
        /// The networks it declares it handles (NetworkDeclaration), chosen without `evaluate`.
        case networks
    }

    /// The fields of a script's `networks` (NetworkDeclaration), read where they are given:
    /// the script's table and a signed catalog's manifest.
    public enum NetworksKey: String, Sendable, CaseIterable {
        case ssids
        case ssidPatterns = "ssid_patterns"
        case bssidPrefixes = "bssid_prefixes"
        case portalHosts = "portal_hosts"
        case gatewayFamilies = "gateway_families"
    }

    /// What `describe` returns about a script's returned table.
    public enum DescriptionKey: String, Sendable, CaseIterable {
        /// The Lua type the script returned.
        case returned
        case name
        case nameType = "name_type"
        /// The `hosts` entries, strings as they are and other values as a list of their type.
        case hosts
        case hostsType = "hosts_type"
        /// The handlers defined, by name, each with its value's Lua type.
        case handlers
        /// The returned table's keys that are neither handlers nor a `ScriptField`.
        case unknown
        case ui
        /// The `networks` field as the script gave it, read by NetworkDeclarationReading.
        case networks
    }

    /// The host libraries' modules, by the names scripts (public ones, as globals) and the
    /// prelude (every one, under `host`) reach them.
    public enum HostModuleName: String, Sendable, CaseIterable {
        case time, json, base64, url, log, html, crypto, wispr
        /// Behind `cmd:http`, `cmd:probe` and `capport.fetch`.
        case http
        /// Behind `cmd:tcp` and `cmd:udp`.
        case socket

        /// Whether scripts see it as a global; the others only the prelude reaches, to pass
        /// them the command's context.
        public var isPublic: Bool { self != .http && self != .socket }
    }

    /// The prelude's `CONTRACT` table: each group of names by the name of its case, mapped
    /// to the name on the wire; the results and the confidences also as lists, in their
    /// order; the lists the runtime adds (`lists`, by name); the store's limit.
    public static func luaTable(storeLimit: Int, lists extra: [(name: String, values: [String])] = []) -> String {
        func list(_ names: [String]) -> String { "{ " + names.map { "\"\($0)\"" }.joined(separator: ", ") + " }" }
        let groups = namesByGroup.sorted { $0.key < $1.key }.map { group, names in
            "\(group) = { " + names.sorted { $0.key < $1.key }.map { "\($0.key) = \"\($0.value)\"" }.joined(separator: ", ") + " }"
        }
        let lists = extra.map { "\($0.name) = \(list($0.values)), " }.joined()
        return "{ results = \(list(CommandResult.allCases.map(\.rawValue))), confidences = \(list(Confidence.allCases.map(\.rawValue))), "
            + groups.joined(separator: ", ") + ", \(lists)store_limit = \(storeLimit) }"
    }

    /// The keyed groups of `luaTable`: group, then the case's name, then the name on the wire.
    public static let namesByGroup: [String: [String: String]] = [
        "entry": names(Entry.self), "helper": names(HelperKey.self), "command": names(CommandKey.self),
        "network": names(NetworkKey.self), "claim": names(ClaimKey.self), "field": names(ScriptField.self),
        "description": names(DescriptionKey.self), "module": names(HostModuleName.self), "context": names(HelperContext.Key.self),
        "result": names(CommandResult.self), "handler": names(HotspotCommand.self),
    ]

    private static func names<Name: CaseIterable & RawRepresentable<String>>(_: Name.Type) -> [String: String] {
        Dictionary(uniqueKeysWithValues: Name.allCases.map { (String(describing: $0), $0.rawValue) })
    }
}

extension LuaTable {
    /// The value at one of the contract's names.
    public subscript<Name: RawRepresentable<String>>(_ name: Name) -> LuaValue {
        get { self[name.rawValue] }
        set { self[name.rawValue] = newValue }
    }
}
