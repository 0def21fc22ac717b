/// The networks a helper declares it handles (a script's `networks`, docs/SCRIPTING.md), as
/// NEHotspotManager's `evaluatedSSIDs`: a declared helper is chosen for a network its
/// declaration matches without running any of its code, and is never sent `evaluate`.
///
/// An exact SSID matches with high confidence, a pattern with low. BSSID prefixes narrow the
/// SSIDs to the venue's access points (a "Free WiFi" of many venues); alone they match any SSID
/// at those access points, with low confidence.
public struct NetworkDeclaration: Sendable, Hashable {
    public let ssids: [String]
    public let ssidPatterns: [SSIDPattern]
    /// Lowercase, `:`-separated: `02:00:5e` or `02:00:5e:10`.
    public let bssidPrefixes: [String]

    public init(ssids: [String] = [], ssidPatterns: [SSIDPattern] = [], bssidPrefixes: [String] = []) {
        self.ssids = ssids
        self.ssidPatterns = ssidPatterns
        self.bssidPrefixes = bssidPrefixes.map { $0.lowercased() }
    }

    /// How a declaration matched a network: its confidence, and the entry that matched, as an
    /// operator reads it (`ssid "Campus Guest"`).
    public struct Match: Sendable, Equatable, CustomStringConvertible {
        public let confidence: Confidence
        public let entry: String

        public var description: String { "\(entry), \(confidence.rawValue) confidence" }
    }

    /// The strongest entry matching `network`; nil when none does.
    public func match(_ network: NetworkDescription) -> Match? {
        let bssid = network.bssid.lowercased()
        let prefix = bssidPrefixes.first { bssid.hasPrefix($0) }
        guard bssidPrefixes.isEmpty || prefix != nil else { return nil }
        let at = prefix.map { " at bssid \($0)" } ?? ""
        // Compared as bytes: two SSIDs that differ only in Unicode normalisation are two networks.
        if let ssid = ssids.first(where: { $0.utf8.elementsEqual(network.ssid.utf8) }) {
            return Match(confidence: .high, entry: "ssid \"\(ssid)\"" + at)
        }
        if let pattern = ssidPatterns.first(where: { $0.matches(network.ssid) }) {
            return Match(confidence: .low, entry: "ssid pattern \"\(pattern.text)\"" + at)
        }
        if ssids.isEmpty, ssidPatterns.isEmpty, let prefix {
            return Match(confidence: .low, entry: "bssid prefix \(prefix)")
        }
        return nil
    }

    /// The entries declared by more than one of `declarations` (a helper's each, in the
    /// helpers' order; nil for one that declares nothing): the same exact SSID, or the same
    /// pattern, where the access points may be the same (either names no BSSID prefix, or one's
    /// prefix starts the other's); or the same BSSID prefix, declared alone. Each is given at the
    /// later declaration with the earlier one's index: evaluate would never choose the later.
    /// Indexed by entry, so ten thousand declarations take no longer than reading them.
    public static func sharedEntries(_ declarations: [NetworkDeclaration?]) -> [(index: Int, earlier: Int, entry: String)] {
        var declared: [String: [Int]] = [:]
        var shared: [(index: Int, earlier: Int, entry: String)] = []
        for (index, declaration) in declarations.enumerated() {
            guard let declaration else { continue }
            var entries = declaration.ssids.map { "ssid \"\($0)\"" } + declaration.ssidPatterns.map { "ssid pattern \"\($0.text)\"" }
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
