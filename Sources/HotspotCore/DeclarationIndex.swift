/// Which helpers' declarations may match a network, found without asking each of them: with
/// ten thousand declared helpers, `NetworkDeclaration.match` on every one at each join and for
/// each scanned network costs milliseconds. The index narrows; `match` still decides.
///
/// A declaration of exact SSIDs alone (BSSID prefixes may narrow them) can match only a
/// network with one of those SSIDs, byte for byte as `match` compares them, so it is indexed
/// by them. Any other declaration (a pattern, BSSID prefixes alone, a kind of entry added
/// later) is a candidate for every network. Positions are in the helpers' order, which
/// arbitration follows.
struct DeclarationIndex: Sendable {
    private var byExactSSID = BySSID<[Int]>()
    /// The declarations the index cannot narrow, asked at every network.
    private var unindexed: [Int] = []
    /// The helpers that declare nothing: they evaluate each network.
    private(set) var undeclared: [Int] = []

    init(_ declarations: [NetworkDeclaration?]) {
        for (position, declaration) in declarations.enumerated() {
            guard let declaration else {
                undeclared.append(position)
                continue
            }
            // Rebuilt from its SSIDs and prefixes alone, a declaration with anything else differs.
            guard !declaration.ssids.isEmpty,
                  declaration == NetworkDeclaration(ssids: declaration.ssids, bssidPrefixes: declaration.bssidPrefixes) else {
                unindexed.append(position)
                continue
            }
            var seen = SSIDSet()
            for ssid in declaration.ssids where !seen.contains(ssid) {
                seen.insert(ssid)
                byExactSSID[ssid, default: []].append(position)
            }
        }
    }

    /// The positions, ascending, of every declared helper whose declaration may match a
    /// network named `ssid`: each one that matches is among them.
    func candidates(for ssid: String) -> [Int] {
        let exact = byExactSSID[ssid] ?? []
        guard !unindexed.isEmpty else { return exact }
        guard !exact.isEmpty else { return unindexed }
        // Both ascending: merged in order.
        var merged: [Int] = []
        merged.reserveCapacity(exact.count + unindexed.count)
        var i = 0, j = 0
        while i < exact.count || j < unindexed.count {
            if j == unindexed.count || (i < exact.count && exact[i] < unindexed[j]) {
                merged.append(exact[i])
                i += 1
            } else {
                merged.append(unindexed[j])
                j += 1
            }
        }
        return merged
    }
}
