/// The networks a helper declares it handles (a script's `networks`, docs/SCRIPTING.md), as
/// NEHotspotManager's `evaluatedSSIDs`: a declared helper is chosen for a network its
/// declaration matches without running any of its code, and is never sent `evaluate`.
///
/// An exact SSID matches with high confidence, a pattern with low. BSSID prefixes narrow the
/// other entries to the venue's access points (a "Free WiFi" of many venues); alone they match
/// any SSID at those access points, with low confidence.
///
/// Portal hosts and gateway families are known only once the network is joined and probed
/// (`match(_:portal:)`): the join probes a network no SSID entry matched. An exact portal host
/// is the venue's own, as an exact SSID, so high; a `*.` pattern low, as an SSID pattern; a
/// gateway family is shared by every venue running that gateway, so low, as the bundled
/// family helpers answer.
public struct NetworkDeclaration: Sendable, Hashable {
    public let ssids: [String]
    public let ssidPatterns: [SSIDPattern]
    /// Lowercase, `:`-separated: `02:00:5e` or `02:00:5e:10`.
    public let bssidPrefixes: [String]
    public let portalHosts: [HostPattern]
    public let gatewayFamilies: [GatewayFamily]

    public init(ssids: [String] = [], ssidPatterns: [SSIDPattern] = [], bssidPrefixes: [String] = [],
                portalHosts: [HostPattern] = [], gatewayFamilies: [GatewayFamily] = []) {
        self.ssids = ssids
        self.ssidPatterns = ssidPatterns
        self.bssidPrefixes = bssidPrefixes.map { $0.lowercased() }
        self.portalHosts = portalHosts
        self.gatewayFamilies = gatewayFamilies
    }

    /// Whether a join must probe the network to match this declaration: it names portal hosts
    /// or gateway families.
    public var namesPortals: Bool { !portalHosts.isEmpty || !gatewayFamilies.isEmpty }

    /// Whether a network of a scan list can match it (`match(_:)`): it names SSIDs, or BSSID
    /// prefixes alone. One that names only portals is never sent `filter_scan_list`.
    public var matchesScanLists: Bool { !ssids.isEmpty || !ssidPatterns.isEmpty || (!bssidPrefixes.isEmpty && !namesPortals) }

    /// How a declaration matched a network: its confidence, and the entry that matched, as an
    /// operator reads it (`ssid "Campus Guest"`).
    public struct Match: Sendable, Equatable, CustomStringConvertible {
        public let confidence: Confidence
        public let entry: String

        public var description: String { "\(entry), \(confidence.rawValue) confidence" }
    }

    /// The strongest SSID or BSSID entry matching `network`; nil when none does.
    public func match(_ network: NetworkDescription) -> Match? {
        guard let (prefix, at) = accessPoint(of: network) else { return nil }
        // Compared as bytes: two SSIDs that differ only in Unicode normalisation are two networks.
        if let ssid = ssids.first(where: { $0.utf8.elementsEqual(network.ssid.utf8) }) {
            return Match(confidence: .high, entry: "ssid \"\(ssid)\"" + at)
        }
        if let pattern = ssidPatterns.first(where: { $0.matches(network.ssid) }) {
            return Match(confidence: .low, entry: "ssid pattern \"\(pattern.text)\"" + at)
        }
        if ssids.isEmpty, ssidPatterns.isEmpty, !namesPortals, let prefix {
            return Match(confidence: .low, entry: "bssid prefix \(prefix)")
        }
        return nil
    }

    /// The strongest portal host or gateway family entry matching what the join's probe saw
    /// of `network`'s portal; nil when none does.
    public func match(_ network: NetworkDescription, portal: PortalSighting) -> Match? {
        guard let (_, at) = accessPoint(of: network) else { return nil }
        if let host = portalHosts.first(where: { $0.isExact && $0.matches(portal.host) }) {
            return Match(confidence: .high, entry: "portal host \(host)" + at)
        }
        if let pattern = portalHosts.first(where: { !$0.isExact && $0.matches(portal.host) }) {
            return Match(confidence: .low, entry: "portal host \(pattern)" + at)
        }
        if let family = portal.family, gatewayFamilies.contains(family) {
            return Match(confidence: .low, entry: "gateway family \(family.rawValue)" + at)
        }
        return nil
    }

    /// The prefix the network's BSSID starts with and how a match says so (`" at bssid
    /// PREFIX"`); no prefix when the declaration names none; nil when it names some and the
    /// network is at none of them.
    private func accessPoint(of network: NetworkDescription) -> (prefix: String?, at: String)? {
        if bssidPrefixes.isEmpty { return (nil, "") }
        let bssid = network.bssid.lowercased()
        return bssidPrefixes.first { bssid.hasPrefix($0) }.map { ($0, " at bssid \($0)") }
    }

    /// The entries declared by more than one of `declarations` (a helper's each, in the
    /// helpers' order; nil for one that declares nothing): the same exact SSID, pattern, portal
    /// host or gateway family, where the access points may be the same (either names no BSSID
    /// prefix, or one's prefix starts the other's); or the same BSSID prefix, declared alone.
    /// Each is given at the later declaration with the earlier one's index: evaluate would
    /// never choose the later.
    /// Indexed by entry, so ten thousand declarations take no longer than reading them.
    public static func sharedEntries(_ declarations: [NetworkDeclaration?]) -> [(index: Int, earlier: Int, entry: String)] {
        var declared: [String: [Int]] = [:]
        var shared: [(index: Int, earlier: Int, entry: String)] = []
        for (index, declaration) in declarations.enumerated() {
            guard let declaration else { continue }
            var entries = declaration.ssids.map { "ssid \"\($0)\"" } + declaration.ssidPatterns.map { "ssid pattern \"\($0.text)\"" }
                + declaration.portalHosts.map { "portal host \($0)" } + declaration.gatewayFamilies.map { "gateway family \($0.rawValue)" }
            if entries.isEmpty { entries = declaration.bssidPrefixes.map { "bssid prefix \($0)" } }
            for entry in Set(entries).sorted() {
                if let earlier = declared[entry]?.first(where: { declarations[$0]!.mayShareAccessPoints(with: declaration) }) {
                    shared.append((index, earlier, entry))
                }
                declared[entry, default: []].append(index)
            }
        }
        return shared
    }

    private func mayShareAccessPoints(with other: NetworkDeclaration) -> Bool {
        bssidPrefixes.isEmpty || other.bssidPrefixes.isEmpty || bssidPrefixes.contains { mine in
            other.bssidPrefixes.contains { $0.hasPrefix(mine) || mine.hasPrefix($0) }
        }
    }
}

/// An SSID pattern: `*` stands for any run of characters, `?` for one; nothing else is special.
public struct SSIDPattern: Sendable, Hashable, CustomStringConvertible {
    public let text: String

    /// A failure saying why when `text` is no pattern a declaration may hold: one with no
    /// literal character would match every SSID, which is `evaluate`'s to judge.
    public static func parse(_ text: String) -> Result<SSIDPattern, PatternError> {
        guard text.contains(where: { $0 != "*" && $0 != "?" }) else {
            return .failure(PatternError(description: "the SSID pattern \"\(text)\" matches every SSID; "
                                         + "declare the venue's own names, or leave the choice to `evaluate`"))
        }
        guard text.utf8.count <= 64 else {
            return .failure(PatternError(description: "the SSID pattern \"\(text.prefix(40))...\" is longer than 64 bytes; an SSID has at most 32"))
        }
        return .success(SSIDPattern(text: text))
    }

    public struct PatternError: Error, Sendable, Equatable, CustomStringConvertible {
        public let description: String
    }

    public var description: String { text }

    public func matches(_ ssid: String) -> Bool {
        let pattern = Array(text), name = Array(ssid)
        // The classic two-pointer glob match: linear but for backtracking to the last `*`.
        var p = 0, n = 0
        var star: (p: Int, n: Int)?
        while n < name.count {
            if p < pattern.count, pattern[p] == "?" || (pattern[p] != "*" && pattern[p] == name[n]) {
                p += 1
                n += 1
            } else if p < pattern.count, pattern[p] == "*" {
                star = (p, n)
                p += 1
            } else if let last = star {
                p = last.p + 1
                n = last.n + 1
                star = (last.p, last.n + 1)
            } else {
                return false
            }
        }
        while p < pattern.count, pattern[p] == "*" { p += 1 }
        return p == pattern.count
    }
}

/// The gateways whose portal the redirect of a join's probe names by its shape alone, by the
/// names of the bundled family helpers (VenueHelpers/) and the simulator's scenarios. The
/// others (OPNsense, MikroTik, Cisco WLC) are told apart only by their login page, which no
/// helper's code has read when a declared helper is chosen.
public enum GatewayFamily: String, Sendable, Hashable, CaseIterable {
    /// `res=notyet`, `challenge`, `uamip` and a numeric `uamport` in the query.
    case coovachilli
    /// `base_grant_url` and `user_continue_url` (click-through), or `login_url` and `continue_url` (sign-on).
    case meraki
    /// `/guest/s/SITE/` with `id` and `url`.
    case unifi
    /// `/cgi-bin/login` with `cmd=login` and `mac`.
    case aruba
    /// `/opennds_preauth/` with `fas`.
    case opennds
    /// `zone` and `redirurl` (its `index.php` on the zone's port).
    case pfsense

    /// Families a script may mean that cannot be declared, and why.
    public static let recognisedByTheirPageOnly = ["opnsense", "mikrotik", "cisco-wlc"]

    /// The family whose redirect has this path and query fields (decoded), if any.
    public static func recognised(path: String, query: [String: String]) -> GatewayFamily? {
        func has(_ names: String...) -> Bool { names.allSatisfy { !(query[$0] ?? "").isEmpty } }
        if query["res"] == "notyet", has("challenge", "uamip"), let port = query["uamport"], !port.isEmpty, port.allSatisfy({ $0.isASCII && $0.isNumber }) {
            return .coovachilli
        }
        if has("base_grant_url", "user_continue_url") || has("login_url", "continue_url") { return .meraki }
        let segments = path.split(separator: "/", omittingEmptySubsequences: false)
        if segments.count == 5, segments[1] == "guest", segments[2] == "s", !segments[3].isEmpty, segments[4].isEmpty, has("id", "url") {
            return .unifi
        }
        if path == "/cgi-bin/login", query["cmd"] == "login", has("mac") { return .aruba }
        if path.hasPrefix("/opennds_preauth/"), has("fas") { return .opennds }
        if has("zone", "redirurl") { return .pfsense }
        return nil
    }
}

/// What a join's probe saw of a captive network's portal: its host, and the gateway family
/// its redirect's shape names (`GatewayFamily.recognised`).
public struct PortalSighting: Sendable, Equatable {
    public var url: String
    /// Lowercase; an IPv6 address in brackets.
    public var host: String
    public var family: GatewayFamily?

    public init(url: String, host: String, family: GatewayFamily?) {
        self.url = url
        self.host = host.lowercased()
        self.family = family
    }
}
