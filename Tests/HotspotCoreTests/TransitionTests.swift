import Testing
import TestSupport
@testable import HotspotCore

/// Every transition of the model (docs/HOTSPOT-MODEL.md), on the fake transport and the
/// test clock.
@Suite struct TransitionTests {
    /// A harness with one helper that claims the network with `high` and logs in.
    static func accepting(_ id: String = "venue") -> Harness {
        let harness = Harness(id)
        harness.transport.answer(id, .evaluate, .claims(.high))
        harness.transport.answer(id, .authenticate, .success)
        harness.transport.answer(id, .maintain, .success)
        harness.transport.answer(id, .logoff, .success)
        return harness
    }

    @Test func authenticationIsRememberedAndARejoinMaintainsWithoutEvaluate() async {
        let harness = Self.accepting()
        #expect(await harness.machine.join(cafe) == .authenticated)
        #expect(harness.persistence.snapshot.chosenHelpers == ["Cafe": "venue"])
        await harness.machine.leave("Cafe")
        #expect(await harness.machine.join(cafe) == .authenticated)
        #expect(harness.transport.sent == ["venue:evaluate", "venue:authenticate", "venue:maintain"])
        let rejoin = harness.transport.requests.last!.request
        #expect(rejoin.didJustJoin)
        #expect(harness.events.transitions.suffix(3) == ["authenticated>inactive", "inactive>maintaining", "maintaining>authenticated"])
    }

    /// SSIDs are bytes: "Café" with a precomposed é (NFC) and with e and a combining accent
    /// (NFD) are two networks, which a session keyed by String (equal by canonical
    /// equivalence) merged into one.
    @Test func theNFCAndNFDFormsOfANameAreTwoNetworks() async {
        let harness = Self.accepting()
        let composed = NetworkDescription(ssid: "Caf\u{E9}"), decomposed = NetworkDescription(ssid: "Cafe\u{301}")
        #expect(!composed.ssid.utf8.elementsEqual(decomposed.ssid.utf8))
        #expect(await harness.machine.join(composed) == .authenticated)
        #expect(await harness.machine.state(of: decomposed.ssid) == .inactive)
        #expect(await harness.machine.join(decomposed) == .authenticated)
        await harness.machine.leave(decomposed.ssid)
        #expect(await harness.machine.state(of: decomposed.ssid) == .inactive)
        #expect(await harness.machine.state(of: composed.ssid) == .authenticated, "leaving the one left the other")
    }

    @Test func eachJoinIsANewWebSession() async {
        let harness = Self.accepting()
        _ = await harness.machine.join(cafe)
        await harness.machine.leave("Cafe")
        _ = await harness.machine.join(cafe)
        let joins = harness.transport.requests.map(\.request.join)
        #expect(joins == [1, 1, 2])
    }

    @Test func aCachedHelperThatFailsToMaintainIsForgottenAndTheNetworkEvaluated() async {
        let harness = Self.accepting()
        _ = await harness.machine.join(cafe)
        await harness.machine.leave("Cafe")
        harness.transport.answer("venue", .maintain, .result(.failure))
        harness.transport.answer("venue", .evaluate, .claims(.none))
        #expect(await harness.machine.join(cafe) == .authenticated)
        #expect(await harness.machine.chosenHelper(of: "Cafe") == nil)
        #expect(harness.persistence.snapshot.chosenHelpers.isEmpty)
        #expect(harness.events.transitions.suffix(3) == ["inactive>maintaining", "maintaining>evaluating", "evaluating>authenticated"])
    }

    @Test func authenticationRequiredDuringMaintainLogsInAgain() async {
        let harness = Self.accepting()
        _ = await harness.machine.join(cafe)
        harness.transport.answer("venue", .maintain, .result(.authenticationRequired))
        #expect(await harness.machine.maintain("Cafe") == .authenticated)
        #expect(harness.events.transitions.suffix(3) == ["authenticated>maintaining", "maintaining>authenticating", "authenticating>authenticated"])
    }

    @Test func theMaintainTimerFiresEveryInterval() async {
        let harness = Self.accepting()
        _ = await harness.machine.join(cafe)
        #expect(await harness.machine.nextDue == .seconds(300))
        harness.clock.advance(by: .seconds(299))
        #expect(harness.transport.sent.filter { $0.hasSuffix("maintain") }.isEmpty)
        harness.clock.advance(by: .seconds(1))
        await harness.events.waitForState("Cafe", .authenticated, count: 2)
        harness.clock.advance(by: .seconds(300))
        await harness.events.waitForState("Cafe", .authenticated, count: 3)
        #expect(harness.transport.sent.filter { $0.hasSuffix("maintain") }.count == 2)
        #expect(await harness.machine.nextDue == .seconds(900))
    }

    @Test func theNetworkCanBringTheMaintainForward() async {
        let harness = Self.accepting()
        harness.checks.maintainAfter(.seconds(30))
        var withAPI = cafe
        withAPI.captivePortalAPI = "https://portal.example/api"
        _ = await harness.machine.join(withAPI)
        harness.clock.advance(by: .seconds(30))
        await harness.events.waitForState("Cafe", .maintaining)
        await harness.events.waitForState("Cafe", .authenticated, count: 2)
        #expect(harness.clock.now == .seconds(30))
    }

    @Test func uiRequiredWaitsForThePersonAndPresentUIGetsTheAnswers() async {
        let harness = Harness("library")
        harness.transport.answer("library", .evaluate, .claims(.high))
        harness.transport.answer("library", .authenticate, .result(.uiRequired))
        harness.transport.answer("library", .presentUI) { request in
            request.answers["email"] == "guest@example.org" ? .success : .failure("no email")
        }
        #expect(await harness.machine.join(cafe) == .presentingUI)
        #expect(await harness.machine.nextDue == nil)
        #expect(await harness.machine.presentUI("Cafe", answers: ["email": "guest@example.org"]) == .authenticated)
        let presented = harness.transport.requests.last!.request
        #expect(presented.command == .presentUI && presented.isChosen && presented.deadline == nil)
        #expect(harness.events.transitions == ["inactive>evaluating", "evaluating>authenticating",
                                               "authenticating>presenting_ui", "presenting_ui>authenticated"])
    }

    @Test func presentUIOnlyAnswersANetworkThatWaits() async {
        let harness = Self.accepting()
        _ = await harness.machine.join(cafe)
        #expect(await harness.machine.presentUI("Cafe") == .authenticated)
        #expect(await harness.machine.presentUI("Elsewhere") == .inactive)
        #expect(!harness.transport.sent.contains("venue:present_ui"))
    }

    @Test func unsupportedNetworkExcludesTheHelperAndEvaluatesAgain() async {
        let harness = Harness("picky", "open")
        harness.transport.answer("picky", .evaluate, .claims(.high))
        harness.transport.answer("picky", .authenticate, .result(.unsupportedNetwork))
        harness.transport.answer("open", .evaluate, .claims(.low))
        harness.transport.answer("open", .authenticate, .success)
        harness.transport.answerInOrder("picky", "open")
        #expect(await harness.machine.join(cafe) == .authenticated)
        #expect(await harness.machine.chosenHelper(of: "Cafe") == "open")
        #expect(harness.persistence.snapshot.exclusions == ["Cafe": ["picky"]])
        #expect(harness.transport.sent.filter { $0 == "picky:evaluate" }.count == 1)
    }

    @Test func temporaryFailureRetriesWithBackoffUpToTheMaximum() async {
        let harness = Harness("flaky")
        harness.transport.answer("flaky", .evaluate, .claims(.high))
        harness.transport.answer("flaky", .authenticate, .result(.temporaryFailure))
        #expect(await harness.machine.join(cafe) == .failure)
        var delays: [Duration] = []
        for attempt in 1...5 {
            let due = await harness.machine.nextDue!
            delays.append(due - harness.clock.now)
            harness.clock.advance(by: due - harness.clock.now)
            await harness.events.waitForState("Cafe", .failure, count: attempt + 1)
        }
        #expect(delays == [.seconds(1), .seconds(2), .seconds(4), .seconds(8), .seconds(8)])
        // A retry is an automatic join.
        #expect(harness.transport.requests.last!.request.network?.didAutoJoin == true)
        // The sixth retry is scheduled, and said, after the fifth failure's transition.
        _ = await harness.events.wait(for: 6) { if case .log(let line) = $0 { line.message.hasPrefix("retrying Cafe") } else { false } }
        #expect(harness.events.logs.filter { $0.message.hasPrefix("retrying Cafe") }.count == 6)
        #expect(harness.persistence.snapshot.autoJoinDisabled.isEmpty)
    }

    @Test func aRetryThatSucceedsResetsTheBackoff() async {
        let harness = Harness("flaky")
        harness.transport.answer("flaky", .evaluate, .claims(.high))
        harness.transport.answer("flaky", .authenticate, .result(.temporaryFailure), .success, .result(.temporaryFailure))
        harness.transport.answer("flaky", .maintain, .result(.authenticationRequired))
        _ = await harness.machine.join(cafe)
        harness.clock.advance(by: .seconds(1))
        await harness.events.waitForState("Cafe", .authenticated)
        #expect(await harness.machine.maintain("Cafe") == .failure)
        #expect(await harness.machine.nextDue == harness.clock.now + .seconds(1))
    }

    /// One failure does not leave an unattended device captive for good (before, it switched
    /// auto-join off until someone typed `join`): the network is tried again on the long
    /// backoff, 300 s, then 600 s, doubling up to 3600 s, and ends logged in once the helper
    /// succeeds.
    @Test func aFailureIsTriedAgainOnTheLongBackoffUntilItSucceeds() async {
        let harness = Harness("strict")
        harness.transport.answer("strict", .evaluate, .claims(.high))
        harness.transport.answer("strict", .authenticate, .result(.failure), .result(.failure), .success)
        #expect(await harness.machine.join(autoJoinedCafe) == .failure)
        #expect(harness.persistence.snapshot.autoJoinDisabled == ["Cafe"])
        #expect(await harness.machine.nextDue == harness.clock.now + .seconds(300))
        harness.clock.advance(by: .seconds(300))
        _ = await harness.events.waitForState("Cafe", .failure, count: 2)
        #expect(await harness.machine.nextDue == harness.clock.now + .seconds(600))
        harness.clock.advance(by: .seconds(600))
        _ = await harness.events.waitForState("Cafe", .authenticated)
        #expect(harness.persistence.snapshot.autoJoinDisabled.isEmpty)
        #expect(harness.transport.requests.filter { $0.request.command == .authenticate }.count == 3)
    }

    /// `status` and the person's page say when a failed network is tried again: the time left
    /// of the pending retry, and none once it is authenticated.
    @Test func nextRetrySaysWhenTheNetworkIsTriedAgain() async {
        let harness = Harness("strict")
        harness.transport.answer("strict", .evaluate, .claims(.high))
        harness.transport.answer("strict", .authenticate, .result(.failure), .success)
        #expect(await harness.machine.nextRetry(of: "Cafe") == nil)
        #expect(await harness.machine.join(autoJoinedCafe) == .failure)
        #expect(await harness.machine.nextRetry(of: "Cafe") == .seconds(300))
        harness.clock.advance(by: .seconds(120))
        #expect(await harness.machine.nextRetry(of: "Cafe") == .seconds(180))
        harness.clock.advance(by: .seconds(180))
        _ = await harness.events.waitForState("Cafe", .authenticated)
        #expect(await harness.machine.nextRetry(of: "Cafe") == nil)
    }

    /// An auto-join of a network whose helper failed waits for the long backoff instead of
    /// trying at once, or never; a join by hand tries at once.
    @Test func anAutoJoinAfterAFailureWaitsForTheLongBackoffAndAJoinByHandTriesNow() async {
        let harness = Harness("strict")
        harness.transport.answer("strict", .evaluate, .claims(.high))
        harness.transport.answer("strict", .authenticate, .result(.failure), .success)
        #expect(await harness.machine.join(cafe) == .failure)
        let sent = harness.transport.requests.count
        #expect(await harness.machine.join(autoJoinedCafe) == .failure)
        #expect(harness.transport.requests.count == sent)
        #expect(harness.events.logs.last?.message.contains("auto-join of Cafe waits since a helper answered failure") == true)
        #expect(await harness.machine.nextDue == harness.clock.now + .seconds(300))
        #expect(await harness.machine.join(cafe) == .authenticated)
        #expect(harness.persistence.snapshot.autoJoinDisabled.isEmpty)
    }

    @Test func aRejoinAskedForEnablesAutoJoinAgainAndJoinsNow() async {
        let harness = Harness("strict")
        harness.transport.answer("strict", .evaluate, .claims(.high))
        harness.transport.answer("strict", .authenticate, .result(.failure), .result(.failure), .success)
        #expect(await harness.machine.join(autoJoinedCafe) == .failure)
        #expect(harness.persistence.snapshot.autoJoinDisabled == ["Cafe"])
        // Failing again, the person's join leaves the network marked as failed, as any failure does.
        #expect(await harness.machine.rejoin(autoJoinedCafe) == .failure)
        #expect(harness.transport.requests.last?.request.network?.didAutoJoin == false)
        #expect(await harness.machine.rejoin(autoJoinedCafe) == .authenticated)
        #expect(harness.persistence.snapshot.autoJoinDisabled.isEmpty)
    }

    @Test func aResultNotValidForTheCommandIsAFailureSayingWhy() async {
        let harness = Harness("confused")
        harness.transport.answer("confused", .evaluate, .claims(.high))
        harness.transport.answer("confused", .authenticate, .result(.authenticationRequired))
        #expect(await harness.machine.join(cafe) == .failure)
        let answered = harness.events.commands(.authenticate).first
        #expect(answered?.result == .failure)
        #expect(answered?.error == "result 'authentication_required' is not valid for authenticate: authentication_required is valid only for maintain")
    }

    @Test func logoffSendsLogoffThenLeavesAndStopsTheTimer() async {
        let harness = Self.accepting()
        _ = await harness.machine.join(cafe)
        #expect(await harness.machine.logoff("Cafe") == .inactive)
        #expect(harness.transport.sent.last == "venue:logoff")
        #expect(harness.events.transitions.suffix(2) == ["authenticated>logging_off", "logging_off>inactive"])
        #expect(await harness.machine.nextDue == nil)
        #expect(await harness.machine.logoff("Cafe") == .inactive)  // nothing to log off now
        #expect(harness.transport.sent.filter { $0 == "venue:logoff" }.count == 1)
    }

    @Test func leavingSendsNothingAndForgetsTheSession() async {
        let harness = Self.accepting()
        _ = await harness.machine.join(cafe)
        let sent = harness.transport.sent
        await harness.machine.leave("Cafe")
        #expect(harness.transport.sent == sent)
        #expect(await harness.machine.state(of: "Cafe") == .inactive)
        #expect(await harness.machine.nextDue == nil)
        #expect(harness.events.transitions.last == "authenticated>inactive")
    }

    @Test func aSuccessTheNetworkContradictsIsRetriedAndNotRemembered() async {
        var policy = Harness.policy
        policy.verifyAuthentication = true
        let harness = Harness("liar", policy: policy)
        harness.transport.answer("liar", .evaluate, .claims(.high))
        harness.transport.answer("liar", .authenticate, .success)
        harness.checks.verdicts(.captive, .connected)
        #expect(await harness.machine.join(cafe) == .failure)
        #expect(harness.persistence.snapshot.chosenHelpers.isEmpty)
        #expect(harness.events.logs.contains { $0.message == "helper liar claimed success but the network is still captive at http://portal.example/login" })
        harness.clock.advance(by: .seconds(1))
        await harness.events.waitForState("Cafe", .authenticated)
        #expect(harness.persistence.snapshot.chosenHelpers == ["Cafe": "liar"])
        let verdicts = harness.events.all.compactMap { event -> ConnectivityState? in
            if case .connectivity(let check) = event { check.verdict } else { nil }
        }
        #expect(verdicts == [.captive, .connected])
    }

    @Test func aRemovedHelperIsReportedAndItsNetworkEvaluatedAtTheNextMaintain() async {
        let harness = Self.accepting("old")
        _ = await harness.machine.join(cafe)
        let replacement = FakeHelper("new")
        harness.transport.answer("new", .evaluate, .claims(.low))
        harness.transport.answer("new", .authenticate, .success)
        await harness.machine.replaceHelpers([replacement])
        #expect(harness.transport.replaced == [["new"]])
        #expect(harness.events.logs.last?.message == "the helper old of Cafe was removed; Cafe is evaluated again at its next maintain")
        #expect(await harness.machine.maintain("Cafe") == .authenticated)
        #expect(await harness.machine.chosenHelper(of: "Cafe") == "new")
    }

    @Test func aStateThatCannotBeWrittenIsReportedAndTheMachineGoesOn() async {
        let harness = Self.accepting()
        harness.persistence.failing.store(true, ordering: .relaxed)
        #expect(await harness.machine.join(cafe) == .authenticated)
        #expect(harness.events.logs.contains { $0.level == .error && $0.message == "the state directory could not be written: disk full" })
    }

    @Test func noTimerRunsOnceTheyAreStopped() async {
        let harness = Self.accepting()
        _ = await harness.machine.join(cafe)
        await harness.machine.stopTimers()
        #expect(await harness.machine.nextDue == nil)
        harness.clock.advance(by: .seconds(600))
        #expect(await harness.machine.maintain("Cafe") == .authenticated)  // by hand it still runs
        #expect(await harness.machine.nextDue == nil)
    }

    @Test func settlingWaitsForTheMaintainUnderWayAndStopsTheTimers() async {
        let harness = Self.accepting()
        _ = await harness.machine.join(cafe)
        harness.transport.hold("venue", .maintain)
        harness.clock.advance(by: .seconds(300))
        await harness.events.waitForState("Cafe", .maintaining)
        async let settled: Void = harness.machine.settle()
        // The machine is free while the maintain waits in the transport, and settle waits for it.
        #expect(await harness.machine.state(of: "Cafe") == .maintaining)
        harness.transport.release("venue", .maintain)
        await settled
        #expect(await harness.machine.state(of: "Cafe") == .authenticated)
        #expect(await harness.machine.nextDue == nil)
    }

    @Test func aJoinCancelledMidCommandRemembersNothingFromIt() async {
        let harness = Harness("venue")
        harness.transport.answer("venue", .evaluate, .claims(.high))
        // What a cancelled command answers: a failure, which would disable auto-join.
        harness.transport.answer("venue", .authenticate, .failure("cancelled"))
        harness.transport.hold("venue", .authenticate)
        let joining = Task { await harness.machine.join(cafe) }
        await harness.events.waitForState("Cafe", .authenticating)
        joining.cancel()
        harness.transport.release("venue", .authenticate)
        #expect(await joining.value == .authenticating)
        #expect(harness.persistence.snapshot.autoJoinDisabled.isEmpty)
        #expect(await harness.machine.nextDue == nil)
        #expect(harness.events.logs.last?.message == "stopped while authenticating; nothing is remembered from the command cut short")
    }

    @Test func commandsCarryTheirDeadlines() async {
        let harness = Self.accepting()
        _ = await harness.machine.join(cafe)
        #expect(harness.transport.requests.allSatisfy { $0.request.deadline == .seconds(45) })
        #expect(harness.events.commands().allSatisfy { $0.milliseconds == 0 })  // the test clock did not move
    }

    @Test func filterScanListReturnsTheClaimsSortedWithDisplayNames() async {
        let harness = Harness([FakeHelper("aroma", displayName: "Aroma"), FakeHelper("beans", displayName: "Beans")])
        harness.transport.answer("aroma", .filterScanList,
                                 HelperResponse(result: .success, claims: [ScannedNetwork(ssid: "Aroma", password: "latte")]))
        harness.transport.answer("beans", .filterScanList,
                                 HelperResponse(result: .success, claims: [ScannedNetwork(ssid: "Beans", bssid: "02:00:00:00:00:02")]))
        let claims = await harness.machine.filterScanList([NetworkDescription(ssid: "Beans"), NetworkDescription(ssid: "Aroma")])
        #expect(claims == [
            NetworkClaim(ssid: "Aroma", bssid: nil, helper: "aroma", displayName: "Aroma", password: "latte"),
            NetworkClaim(ssid: "Beans", bssid: "02:00:00:00:00:02", helper: "beans", displayName: "Beans", password: nil),
        ])
        #expect(harness.transport.requests.first?.request.networkList?.count == 2)
    }

    @Test func theScanListIsFilteredEveryIntervalWhileWatched() async {
        let harness = Harness("aroma")
        harness.transport.answer("aroma", .filterScanList, HelperResponse(result: .success, claims: [ScannedNetwork(ssid: "Aroma")]))
        var updates = harness.machine.watchScanList(every: .seconds(5)) { [NetworkDescription(ssid: "Aroma")] }.makeAsyncIterator()
        #expect(await updates.next()?.map(\.ssid) == ["Aroma"])
        await harness.clock.waitForSleeper()
        harness.clock.advance(by: .seconds(5))
        #expect(await updates.next()?.map(\.ssid) == ["Aroma"])
        #expect(harness.transport.sent == ["aroma:filter_scan_list", "aroma:filter_scan_list"])
    }
}
