import Testing
import TestSupport
@testable import HotspotCore

/// The index of declarations by exact SSID narrows which declarations are asked at a join
/// and for a scan list; `NetworkDeclaration.match` still decides, so the index must offer
/// every declaration that matches, in the helpers' order.
@Suite struct DeclarationIndexTests {
    static let declarations: [NetworkDeclaration?] = [
        NetworkDeclaration(ssids: ["Cafe"]),
        nil,
        NetworkDeclaration(ssids: ["Cafe"], bssidPrefixes: ["02:00:00:00:01"]),  // elsewhere
        NetworkDeclaration(ssids: ["Cafe", "Bar"], bssidPrefixes: ["02:00:00"]),
        NetworkDeclaration(ssidPatterns: [pattern("Caf*")]),
        NetworkDeclaration(bssidPrefixes: ["02:00:00:00:00"]),
        NetworkDeclaration(ssids: ["Library"], ssidPatterns: [pattern("Hotel-*")]),
        NetworkDeclaration(ssids: ["Caf\u{E9}"]),  // composed: not the decomposed name's bytes
        NetworkDeclaration(ssids: ["Bar", "Bar"]),
        nil,
    ]

    static let networks = ["Cafe", "Bar", "Library", "Hotel-Ost", "Caf\u{E9}", "Cafe\u{301}", "Elsewhere", "", "cafe"].flatMap { ssid in
        ["02:00:00:00:00:01", "02:00:00:00:01:07", "04:00:00:00:00:01"].map { NetworkDescription(ssid: ssid, bssid: $0) }
    }

    @Test func theIndexOffersEveryDeclarationThatMatchesInTheHelpersOrder() {
        let index = DeclarationIndex(Self.declarations)
        #expect(index.undeclared == [1, 9])
        var matched = 0
        for network in Self.networks {
            let linear = Self.declarations.indices.filter { Self.declarations[$0]?.match(network) != nil }
            let candidates = index.candidates(for: network.ssid)
            #expect(candidates == candidates.sorted() && Set(candidates).count == candidates.count, "\(network.ssid)")
            #expect(candidates.filter { Self.declarations[$0]?.match(network) != nil } == linear, "\(network.ssid) at \(network.bssid)")
            matched += linear.count
        }
        #expect(matched > Self.networks.count)  // the table exercises matches, not only misses
        // Exact SSIDs alone narrow: a name nobody declares offers only what the index cannot narrow.
        #expect(index.candidates(for: "Elsewhere") == [4, 5, 6])
        #expect(index.candidates(for: "Bar") == [3, 4, 5, 6, 8])
    }

    @Test func aJoinChoosesByTheIndexAsByTheDeclarations() async {
        let harness = Harness([FakeHelper("evaluates"), FakeHelper("pattern", declaring: NetworkDeclaration(ssidPatterns: [Self.pattern("Caf*")])),
                               FakeHelper("elsewhere", declaring: NetworkDeclaration(ssids: ["Cafe"], bssidPrefixes: ["04:00"])),
                               FakeHelper("cafe", declaring: NetworkDeclaration(ssids: ["Cafe"], bssidPrefixes: ["02:00"]))])
        harness.transport.answer("cafe", .authenticate, .success)
        #expect(await harness.machine.join(cafe) == .authenticated)
        #expect(harness.transport.sent == ["cafe:authenticate"])
        #expect(harness.events.logs.contains { $0.message == "Cafe matches the declaration of cafe (ssid \"Cafe\" at bssid 02:00, high confidence)" })
    }

    @Test func aHelperSwitchedOffForTheNetworkIsPassedOver() async throws {
        let harness = Harness([FakeHelper("first", declaring: NetworkDeclaration(ssids: ["Cafe"])),
                               FakeHelper("second", declaring: NetworkDeclaration(ssids: ["Cafe"]))])
        harness.transport.answer("second", .authenticate, .success)
        try await harness.machine.setHelper("first", enabled: false, ssid: "Cafe")
        #expect(await harness.machine.declaredHelper(for: cafe)?.helper.id == "second")
        #expect(await harness.machine.join(cafe) == .authenticated)
        #expect(harness.transport.sent == ["second:authenticate"])
        // Everywhere off: not sent the scan list either.
        try await harness.machine.setHelper("second", enabled: false)
        harness.transport.answer("first", .filterScanList, .success)
        _ = await harness.machine.filterScanList([cafe])
        #expect(harness.transport.sent == ["second:authenticate", "first:filter_scan_list"])
    }

    @Test func aReloadThatChangesTheSSIDMovesTheHelperInTheIndex() async {
        let harness = Harness([FakeHelper("venue", declaring: NetworkDeclaration(ssids: ["Cafe"]))])
        harness.transport.answer("venue", .authenticate, .success, .success)
        harness.transport.answer("venue", .filterScanList, .success)
        #expect(await harness.machine.declaredHelper(for: cafe)?.helper.id == "venue")
        let bar = NetworkDescription(ssid: "Bar", bssid: "02:00:00:00:00:02")
        await harness.machine.replaceHelpers([FakeHelper("other"), FakeHelper("venue", declaring: NetworkDeclaration(ssids: ["Bar"]))])
        #expect(await harness.machine.declaredHelper(for: cafe) == nil)
        #expect(await harness.machine.declaredHelper(for: bar)?.helper.id == "venue")
        _ = await harness.machine.filterScanList([cafe])
        #expect(!harness.transport.sent.contains("venue:filter_scan_list"))
        _ = await harness.machine.filterScanList([cafe, bar])
        #expect(harness.transport.sent.filter { $0.hasPrefix("venue:") } == ["venue:filter_scan_list"])
        #expect(await harness.machine.join(bar) == .authenticated)
        #expect(await harness.machine.chosenHelper(of: "Bar") == "venue")
    }

    private static func pattern(_ text: String) -> SSIDPattern { try! SSIDPattern.parse(text).get() }
}
