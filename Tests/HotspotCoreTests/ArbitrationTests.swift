import Testing
import TestSupport
@testable import HotspotCore

/// Evaluate goes to every helper at once; the first `high` wins at once, else the first
/// `low` once all have answered; nobody claiming leaves the network authenticated.
@Suite struct ArbitrationTests {
    @Test func aHighWinsOverALowThatAnsweredFirst() async {
        let harness = Harness("fast", "slow")
        harness.transport.answer("fast", .evaluate, .claims(.low))
        harness.transport.answer("slow", .evaluate, .claims(.high))
        harness.transport.answer("slow", .authenticate, .success)
        harness.transport.answerInOrder("fast", "slow")
        #expect(await harness.machine.join(cafe) == .authenticated)
        #expect(await harness.machine.chosenHelper(of: "Cafe") == "slow")
        #expect(harness.transport.sent == ["fast:evaluate", "slow:evaluate", "slow:authenticate"])
        #expect(harness.events.transitions == ["inactive>evaluating", "evaluating>authenticating", "authenticating>authenticated"])
    }

    @Test func theFirstHighWinsAndTheOthersAreCancelledAndReported() async {
        let harness = Harness("first", "second", "third")
        for id in ["first", "second", "third"] { harness.transport.answer(id, .evaluate, .claims(.high)) }
        harness.transport.answer("first", .authenticate, .success)
        harness.transport.answerInOrder("first", "second", "third")
        #expect(await harness.machine.join(cafe) == .authenticated)
        #expect(harness.transport.cancelled == ["second", "third"])
        let evaluations = harness.events.commands(.evaluate)
        #expect(evaluations.map(\.helper) == ["first", "second", "third"])
        #expect(evaluations.dropFirst().allSatisfy { $0.result == .failure && $0.error == "cancelled" })
        #expect(evaluations.first?.confidence == .high)
    }

    @Test func theFirstLowWinsOnceAllHaveAnswered() async {
        let harness = Harness("a", "b", "c")
        harness.transport.answer("a", .evaluate, .claims(.none))
        harness.transport.answer("b", .evaluate, .claims(.low))
        harness.transport.answer("c", .evaluate, .claims(.low))
        harness.transport.answer("b", .authenticate, .success)
        harness.transport.answerInOrder("a", "b", "c")
        #expect(await harness.machine.join(cafe) == .authenticated)
        #expect(await harness.machine.chosenHelper(of: "Cafe") == "b")
        #expect(harness.transport.cancelled.isEmpty)
        #expect(harness.events.commands(.evaluate).count == 3)
    }

    @Test func aConfidenceCountsOnlyWithSuccess() async {
        let harness = Harness("liar")
        harness.transport.answer("liar", .evaluate, HelperResponse(result: .failure, confidence: .high, error: "broke"))
        #expect(await harness.machine.join(cafe) == .authenticated)
        #expect(await harness.machine.chosenHelper(of: "Cafe") == nil)
        #expect(harness.events.commands(.evaluate).first?.confidence == Confidence.none)
    }

    @Test func aNetworkNobodyClaimsIsAuthenticatedWithNoHelper() async {
        let harness = Harness("shy")
        harness.transport.answer("shy", .evaluate, .claims(.none))
        #expect(await harness.machine.join(cafe) == .authenticated)
        #expect(await harness.machine.chosenHelper(of: "Cafe") == nil)
        #expect(harness.events.transitions == ["inactive>evaluating", "evaluating>authenticated"])
        #expect(await harness.machine.nextDue == nil)  // nothing to maintain
    }

    @Test func helpersWithoutAHandlerAreAnsweredWithoutBeingAsked() async {
        let harness = Harness([FakeHelper("silent", handles: [.authenticate]), FakeHelper("venue")])
        harness.transport.answer("venue", .evaluate, .claims(.low))
        harness.transport.answer("venue", .authenticate, .success)
        #expect(await harness.machine.join(cafe) == .authenticated)
        #expect(!harness.transport.sent.contains("silent:evaluate"))
        #expect(harness.events.commands(.evaluate).first { $0.helper == "silent" }?.result == .commandNotRecognized)
    }

    @Test func switchedOffAndExcludedHelpersAreNotAsked() async throws {
        let harness = Harness("everywhere", "here", "excluded", "asked")
        harness.transport.answer("asked", .evaluate, .claims(.none))
        try await harness.machine.setHelper("everywhere", enabled: false)
        try await harness.machine.setHelper("here", enabled: false, ssid: "Cafe")
        try harness.persistence.update { $0.exclusions["Cafe"] = ["excluded"] }
        _ = await harness.machine.join(cafe)
        #expect(harness.transport.sent == ["asked:evaluate"])
        // Switched off for one network only: still asked about the scan list.
        harness.transport.answer("here", .filterScanList, .success)
        harness.transport.answer("excluded", .filterScanList, .success)
        harness.transport.answer("asked", .filterScanList, .success)
        _ = await harness.machine.filterScanList([cafe])
        #expect(Set(harness.transport.sent.filter { $0.hasSuffix("filter_scan_list") }.map { String($0.split(separator: ":")[0]) })
            == ["here", "excluded", "asked"])
        try await harness.machine.setHelper("here", enabled: true, ssid: "Cafe")
        try await harness.machine.setHelper("everywhere", enabled: true)
        #expect(harness.persistence.snapshot.helpersOff(for: "Cafe") == ["excluded"])
    }
}
