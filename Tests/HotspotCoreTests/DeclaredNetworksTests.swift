import Testing
import TestSupport
@testable import HotspotCore

/// Helpers that declare their networks are chosen by the declaration, never sent evaluate;
/// helpers that declare nothing evaluate as before.
@Suite struct DeclaredNetworksTests {
    @Test func anExactSSIDWinsWithoutAnyEvaluate() async {
        let harness = Harness([FakeHelper("evaluates"), FakeHelper("cafe", declaring: NetworkDeclaration(ssids: ["Cafe"]))])
        harness.transport.answer("evaluates", .evaluate, .claims(.high))
        harness.transport.answer("cafe", .authenticate, .success)
        #expect(await harness.machine.join(cafe) == .authenticated)
        #expect(await harness.machine.chosenHelper(of: "Cafe") == "cafe")
        #expect(harness.transport.sent == ["cafe:authenticate"])
        #expect(harness.events.logs.contains { $0.message == "Cafe matches the declaration of cafe (ssid \"Cafe\", high confidence)" })
    }

    @Test func aPatternIsLowAndAnEvaluatedHighBeatsIt() async {
        let harness = Harness([FakeHelper("chain", declaring: NetworkDeclaration(ssidPatterns: [pattern("Caf?*")])),
                               FakeHelper("venue"), FakeHelper("other", declaring: NetworkDeclaration(ssids: ["Library"]))])
        harness.transport.answer("venue", .evaluate, .claims(.high))
        harness.transport.answer("venue", .authenticate, .success)
        #expect(await harness.machine.join(cafe) == .authenticated)
        #expect(await harness.machine.chosenHelper(of: "Cafe") == "venue")
        #expect(harness.transport.sent == ["venue:evaluate", "venue:authenticate"])
    }

    @Test func aPatternWinsOverEvaluatedLows() async {
        let harness = Harness([FakeHelper("venue"), FakeHelper("chain", declaring: NetworkDeclaration(ssidPatterns: [pattern("C*")]))])
        harness.transport.answer("venue", .evaluate, .claims(.low))
        harness.transport.answer("chain", .authenticate, .success)
        #expect(await harness.machine.join(cafe) == .authenticated)
        #expect(await harness.machine.chosenHelper(of: "Cafe") == "chain")
        #expect(harness.transport.sent == ["venue:evaluate", "chain:authenticate"])
    }

    @Test func bssidPrefixesNarrowTheSSIDs() async {
        let elsewhere = NetworkDeclaration(ssids: ["Cafe"], bssidPrefixes: ["02:00:00:00:01"])
        let here = NetworkDeclaration(ssids: ["Cafe"], bssidPrefixes: ["02:00:00:00:00"])
        #expect(elsewhere.match(cafe) == nil)
        #expect(here.match(cafe) == .init(confidence: .high, entry: "ssid \"Cafe\" at bssid 02:00:00:00:00"))
        #expect(NetworkDeclaration(bssidPrefixes: ["02:00:00"]).match(cafe)?.confidence == .low)
        let harness = Harness([FakeHelper("elsewhere", declaring: elsewhere), FakeHelper("here", declaring: here)])
        harness.transport.answer("here", .authenticate, .success)
        #expect(await harness.machine.join(cafe) == .authenticated)
        #expect(harness.transport.sent == ["here:authenticate"])
    }

    @Test func twoHelpersDeclaringTheSameSSIDAreReportedAndTheFirstChosen() async {
        let harness = Harness([FakeHelper("a", declaring: NetworkDeclaration(ssids: ["Cafe"])),
                               FakeHelper("b", declaring: NetworkDeclaration(ssids: ["Cafe", "Bar"]))])
        harness.transport.answer("a", .authenticate, .success)
        #expect(await harness.machine.join(cafe) == .authenticated)
        #expect(await harness.machine.chosenHelper(of: "Cafe") == "a")
        #expect(harness.events.logs.contains { $0.level == .warn && $0.message.hasPrefix("Cafe matches the declarations of a, b alike") })
        let shared = NetworkDeclaration.sharedEntries([
            NetworkDeclaration(ssids: ["Cafe"], bssidPrefixes: ["02:00"]), nil,
            NetworkDeclaration(ssids: ["Cafe"], bssidPrefixes: ["04:00"]),  // other access points
            NetworkDeclaration(ssids: ["Bar", "Cafe"], bssidPrefixes: ["04:00:01"]),
            NetworkDeclaration(ssidPatterns: [try! SSIDPattern.parse("Bar*").get()]),
            NetworkDeclaration(bssidPrefixes: ["06:00"]), NetworkDeclaration(bssidPrefixes: ["06:00"]),
        ])
        #expect(shared.map { "\($0.index)<\($0.earlier): \($0.entry)" } == ["3<2: ssid \"Cafe\"", "6<5: bssid prefix 06:00"])
    }

    @Test func aSwitchedOffDeclaredHelperIsNotChosen() async throws {
        let harness = Harness([FakeHelper("cafe", declaring: NetworkDeclaration(ssids: ["Cafe"]))])
        try await harness.machine.setHelper("cafe", enabled: false, ssid: "Cafe")
        #expect(await harness.machine.declaredHelper(for: cafe) == nil)
        #expect(await harness.machine.join(cafe) == .authenticated)
        #expect(harness.transport.sent.isEmpty)
        #expect(await harness.machine.chosenHelper(of: "Cafe") == nil)
    }

    @Test(arguments: [("Caf?", "Cafe", true), ("*-Guest", "Hotel-Guest", true), ("*-Guest", "Hotel-Guests", false),
                      ("a*b*c", "aXXbYYc", true), ("a*b*c", "aXXbYY", false), ("Café*", "Café Central", true), ("x", "xx", false)])
    func patterns(_ text: String, _ ssid: String, _ matches: Bool) {
        #expect(pattern(text).matches(ssid) == matches)
    }

    @Test func aPatternMatchingEverySSIDIsRefused() {
        for text in ["*", "?*", "**"] {
            #expect(throws: SSIDPattern.PatternError.self) { try SSIDPattern.parse(text).get() }
        }
    }

    private func pattern(_ text: String) -> SSIDPattern { try! SSIDPattern.parse(text).get() }
}
