import Testing
@testable import HotspotCore
import TestSupport

/// `present_ui` waits on a person, not on a script: it is bounded in CPU time, and a
/// person's logoff, switching its helper off, leaving the network or giving up ends it.
@Suite struct PresentUITests {
    /// A network waiting in `presenting_ui` for the helper `library`, whose `present_ui`
    /// is held in flight until released.
    static func waiting() async -> Harness {
        let harness = Harness("library")
        harness.transport.answer("library", .evaluate, .claims(.high))
        harness.transport.answer("library", .authenticate, .result(.uiRequired))
        harness.transport.answer("library", .presentUI, .success)
        harness.transport.answer("library", .logoff, .success)
        #expect(await harness.machine.join(cafe) == .presentingUI)
        harness.transport.hold("library", .presentUI)
        return harness
    }

    /// Starts `present_ui` and waits until it is in flight.
    static func presenting(_ harness: Harness) async throws -> Task<HotspotState, Never> {
        let presenting = Task { await harness.machine.presentUI("Cafe", answers: ["email": "guest@example.org"]) }
        try await eventually("present_ui is in flight") { harness.transport.isHolding("library", .presentUI) }
        return presenting
    }

    @Test func presentUICarriesItsCPULimitAndNoDeadline() async throws {
        let policy = HotspotMachine<FakeTransport>.Policy(presentUIDeadline: nil, presentUICPULimit: .milliseconds(1500))
        let harness = Harness("library", policy: policy)
        harness.transport.answer("library", .evaluate, .claims(.high))
        harness.transport.answer("library", .authenticate, .result(.uiRequired))
        harness.transport.answer("library", .presentUI, .success)
        _ = await harness.machine.join(cafe)
        #expect(await harness.machine.presentUI("Cafe") == .authenticated)
        let requests = harness.transport.requests.map(\.request)
        #expect(requests.filter { $0.command != .presentUI }.allSatisfy { $0.cpuLimit == nil })
        let presented = try #require(requests.last)
        #expect(presented.command == .presentUI && presented.deadline == nil && presented.cpuLimit == .milliseconds(1500))
    }

    @Test func logoffEndsAPresentUIUnderWay() async throws {
        let harness = await Self.waiting()
        let presenting = try await Self.presenting(harness)
        #expect(await harness.machine.logoff("Cafe") == .inactive)
        #expect(await presenting.value == .inactive)
        #expect(harness.transport.cancelledCommands == ["library:present_ui"])
        // Never logged in: no logoff command goes to the helper, and auto-join is untouched.
        #expect(!harness.transport.sent.contains("library:logoff"))
        #expect(harness.persistence.snapshot.autoJoinDisabled.isEmpty)
        #expect(harness.events.transitions.last == "presenting_ui>inactive")
    }

    @Test func logoffOfANetworkWaitingWithNoPresentUIStopsTheWait() async {
        let harness = await Self.waiting()
        #expect(await harness.machine.logoff("Cafe") == .inactive)
        #expect(harness.transport.cancelledCommands.isEmpty)
        #expect(!harness.transport.sent.contains("library:logoff"))
    }

    @Test func switchingTheHelperOffEndsItsPresentUI() async throws {
        let harness = await Self.waiting()
        let presenting = try await Self.presenting(harness)
        try await harness.machine.setHelper("library", enabled: false, ssid: "Cafe")
        #expect(await presenting.value == .inactive)
        #expect(harness.transport.cancelledCommands == ["library:present_ui"])
        #expect(harness.events.logs.contains { $0.message.contains("its helper library was switched off") })
    }

    @Test func switchingAnotherHelperOffLeavesItAlone() async throws {
        let harness = await Self.waiting()
        let presenting = try await Self.presenting(harness)
        try await harness.machine.setHelper("other", enabled: false)
        #expect(await harness.machine.state(of: "Cafe") == .presentingUI)
        harness.transport.release("library", .presentUI)
        #expect(await presenting.value == .authenticated)
    }

    @Test func leavingTheNetworkEndsItsPresentUI() async throws {
        let harness = await Self.waiting()
        let presenting = try await Self.presenting(harness)
        await harness.machine.leave("Cafe")
        #expect(await presenting.value == .inactive)
        #expect(harness.transport.cancelledCommands == ["library:present_ui"])
    }

    /// The person gave up (their `ui` request went away): the helper's command is
    /// cancelled and the network goes on waiting for a person, nothing failed.
    @Test func aPersonGivingUpLeavesTheNetworkWaiting() async throws {
        let harness = await Self.waiting()
        let presenting = try await Self.presenting(harness)
        presenting.cancel()
        #expect(await presenting.value == .presentingUI)
        #expect(harness.transport.cancelledCommands == ["library:present_ui"])
        #expect(harness.persistence.snapshot.autoJoinDisabled.isEmpty)
        #expect(!harness.events.transitions.contains("presenting_ui>failure"))
        // The person can answer again.
        harness.transport.release("library", .presentUI)
        #expect(await harness.machine.presentUI("Cafe") == .authenticated)
    }

    /// A second `ui` while one runs is not sent to the helper: one present_ui at a time.
    @Test func onePresentUIAtATime() async throws {
        let harness = await Self.waiting()
        let presenting = try await Self.presenting(harness)
        #expect(await harness.machine.presentUI("Cafe") == .presentingUI)
        harness.transport.release("library", .presentUI)
        #expect(await presenting.value == .authenticated)
        #expect(harness.transport.sent.filter { $0 == "library:present_ui" }.count == 1)
    }
}
