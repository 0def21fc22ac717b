import Foundation
import LuaSandbox
import Locking
import Testing
@testable import HotspotRuntime
import HotspotCore

@Suite struct ArbitrationTests {
    @Test func aSlowHighBeatsAFastLowWhenItAnswersInTime() async throws {
        let fixture = try await RuntimeFixture(scripts: [
            "fast": venue("Fast", confidence: "low", handlers: ["authenticate": "return 'success'"]),
            "slow": venue("Slow", confidence: "high", delay: 0.3, handlers: ["authenticate": "return 'success'"]),
        ])
        #expect(await fixture.runtime.join(guest) == .authenticated)
        #expect(await fixture.runtime.chosenHelper(of: guest.ssid) == "slow")
        #expect(fixture.events.commands(.authenticate).map(\.helper) == ["slow"])
    }

    /// Runaways in C, one per group of the worker, once cost every other helper its evaluate:
    /// all failed "deadline exceeded" and the network ended with no helper. The innocents run
    /// again with their whole deadline, and the one that claims the network logs in.
    @Test func runawayHelpersDoNotCostTheOthersTheirEvaluate() async throws {
        var scripts: [String: String] = [:]
        // Loaded in name order, so the runaways take every group of the worker first.
        for index in 0..<ProcessInfo.processInfo.activeProcessorCount {
            scripts["a\(index)"] = venue("Runaway", evaluate: "('a'):rep(3000):find('.-.-.-b')")
        }
        scripts["b"] = venue("Innocent", confidence: "high", handlers: ["authenticate": "return 'success'"])
        scripts["c"] = venue("Other")
        let fixture = try await RuntimeFixture(scripts: scripts, configuration: .init(policy: .init(commandDeadline: .seconds(1))))
        #expect(await fixture.runtime.join(guest) == .authenticated)
        #expect(await fixture.runtime.chosenHelper(of: guest.ssid) == "b")
        let innocents = fixture.events.commands(.evaluate).filter { !$0.helper.hasPrefix("a") }
        #expect(innocents.first { $0.helper == "b" }?.result == .success, "\(innocents)")
        // The other innocent is cancelled once the high answer wins, never past its deadline.
        #expect(!innocents.contains { $0.error?.contains("deadline exceeded") == true }, "\(innocents)")
        #expect(fixture.events.logs.contains { $0.helper == "b" && $0.message.contains("ran again on a new worker process") })
    }

    @Test func theLowWinsWhenTheHighFailsOrOverruns() async throws {
        for failing in ["error('portal unreachable')", "while true do end"] {
            let fixture = try await RuntimeFixture(scripts: [
                "fast": venue("Fast", confidence: "low", handlers: ["authenticate": "return 'success'"]),
                "broken": venue("Broken", evaluate: failing, handlers: ["authenticate": "return 'success'"]),
            ], configuration: .init(policy: .init(commandDeadline: .milliseconds(300))))
            #expect(await fixture.runtime.join(guest) == .authenticated)
            #expect(await fixture.runtime.chosenHelper(of: guest.ssid) == "fast")
            let broken = try #require(fixture.events.commands(.evaluate).first { $0.helper == "broken" })
            #expect(broken.result == .failure)
            #expect(broken.error != nil)
        }
    }

    @Test func theFirstOfTwoHighsWinsAndTheOtherIsCancelled() async throws {
        let fixture = try await RuntimeFixture(scripts: [
            "first": venue("First", confidence: "high", handlers: ["authenticate": "return 'success'"]),
            "second": venue("Second", confidence: "high", delay: 10, handlers: ["authenticate": "return 'success'"]),
        ])
        let start = Date()
        #expect(await fixture.runtime.join(guest) == .authenticated)
        #expect(Date().timeIntervalSince(start) < 8)  // it did not wait for the second's 10 s
        #expect(await fixture.runtime.chosenHelper(of: guest.ssid) == "first")
        let second = try #require(fixture.events.commands(.evaluate).first { $0.helper == "second" })
        #expect(second.error == "cancelled")
    }

    @Test func aNetworkNobodyClaimsIsAuthenticatedWithNoHelper() async throws {
        let fixture = try await RuntimeFixture(scripts: ["shy": venue("Shy", confidence: "none")])
        #expect(await fixture.runtime.join(guest) == .authenticated)
        #expect(await fixture.runtime.chosenHelper(of: guest.ssid) == nil)
        #expect(fixture.events.transitions == ["inactive>evaluating", "evaluating>authenticated"])
        #expect(fixture.events.commands(.authenticate).isEmpty)
    }

    @Test func switchedOffHelpersAreNotAsked() async throws {
        let fixture = try await RuntimeFixture(scripts: [
            "a": venue("A", confidence: "high", handlers: ["authenticate": "return 'success'"]),
            "b": venue("B", confidence: "low", handlers: ["authenticate": "return 'success'"]),
        ])
        try await fixture.runtime.setHelper("a", enabled: false, ssid: guest.ssid)
        #expect(await fixture.runtime.join(guest) == .authenticated)
        #expect(await fixture.runtime.chosenHelper(of: guest.ssid) == "b")
        #expect(fixture.events.commands(.evaluate).map(\.helper) == ["b"])
    }
}

@Suite struct TransitionTests {
    static let accepting = venue("Venue", confidence: "high", handlers: [
        "authenticate": "cmd.store.logins = tostring((tonumber(cmd.store.logins) or 0) + 1) return 'success'",
        "maintain": "cmd.store.just_joined = tostring(cmd.network.did_just_join) return 'success'",
        "logoff": "cmd.store.logged_off = 'yes' return 'success'",
    ])

    @Test func aRejoinUsesTheCachedHelperWithoutEvaluate() async throws {
        let fixture = try await RuntimeFixture(scripts: ["venue": Self.accepting])
        #expect(await fixture.runtime.join(guest) == .authenticated)
        let restarted = try await fixture.restarted()
        #expect(await restarted.runtime.join(guest) == .authenticated)
        #expect(restarted.events.commands(.evaluate).isEmpty)
        #expect(restarted.events.transitions == ["inactive>maintaining", "maintaining>authenticated"])
        #expect(restarted.runtime.stateDirectory.store(helper: "venue", ssid: guest.ssid)
            == ["logins": "1", "just_joined": "true"])
    }

    /// A store that cannot be written (a full or read-only file system) once turned the
    /// helper's success, and the portal's real session, into `failure` and switched the
    /// network's auto-join off. The success stands, the store is kept, and the fault is said.
    @Test func aStoreThatCannotBeWrittenLeavesTheSuccessStanding() async throws {
        let fixture = try await RuntimeFixture(scripts: ["venue": Self.accepting])
        // A directory where the helper's store file goes fails its write, even for root.
        try FileManager.default.createDirectory(atPath: fixture.stateDirectory + "/store/venue.json/in-the-way",
                                                withIntermediateDirectories: true)
        #expect(await fixture.runtime.join(guest) == .authenticated)
        #expect(fixture.events.commands(.authenticate).map(\.result) == [.success])
        #expect(fixture.runtime.stateDirectory.snapshot.autoJoinDisabled.isEmpty)
        #expect(fixture.runtime.stateDirectory.store(helper: "venue", ssid: guest.ssid) == ["logins": "1"])
        #expect(fixture.events.logs.contains { $0.level == .error && $0.message.hasPrefix("cmd.store could not be saved: ")
                                                 && $0.message.contains("kept in memory") })
    }

    @Test func unsupportedNetworkExcludesTheHelperAndEvaluatesAgain() async throws {
        let fixture = try await RuntimeFixture(scripts: [
            "picky": venue("Picky", confidence: "high", handlers: ["authenticate": "return 'unsupported_network'"]),
            "other": venue("Other", confidence: "low", handlers: ["authenticate": "return 'success'"]),
        ])
        #expect(await fixture.runtime.join(guest) == .authenticated)
        #expect(await fixture.runtime.chosenHelper(of: guest.ssid) == "other")
        #expect(fixture.runtime.stateDirectory.snapshot.exclusions[guest.ssid] == ["picky"])
        #expect(fixture.events.commands(.evaluate).filter { $0.helper == "picky" }.count == 1)
    }

    @Test func anAutoJoinAfterAFailureWaitsForTheLongBackoff() async throws {
        let fixture = try await RuntimeFixture(scripts: [
            "strict": venue("Strict", confidence: "high", handlers: ["authenticate": "return 'failure'"]),
        ])
        #expect(await fixture.runtime.join(guest) == .failure)
        #expect(fixture.runtime.stateDirectory.snapshot.autoJoinDisabled == [guest.ssid])
        var autoJoin = guest
        autoJoin.didAutoJoin = true
        #expect(await fixture.runtime.join(autoJoin) == .failure)
        #expect(fixture.events.logs.last?.message.contains("auto-join of \(guest.ssid) waits") == true)
    }

    @Test func uiRequiredWaitsForPresentUI() async throws {
        let fixture = try await RuntimeFixture(scripts: [
            "ui": venue("UI", confidence: "high", handlers: [
                "authenticate": "return 'ui_required'",
                "present_ui": "return 'success'",
            ]),
        ])
        #expect(await fixture.runtime.join(guest) == .presentingUI)
        #expect(await fixture.runtime.maintain(guest.ssid) == .presentingUI)  // nothing happens by itself
        #expect(await fixture.runtime.presentUI(guest.ssid) == .authenticated)
        #expect(fixture.events.transitions.suffix(2) == ["authenticating>presenting_ui", "presenting_ui>authenticated"])
    }

    /// `present_ui` has no deadline, as it waits on a person; its CPU time is bounded all
    /// the same, so a script that loops fails instead of spinning a core for good.
    @Test func aPresentUIThatLoopsIsStoppedByItsCPULimit() async throws {
        let fixture = try await RuntimeFixture(scripts: [
            "ui": venue("UI", confidence: "high", handlers: [
                "authenticate": "return 'ui_required'",
                "present_ui": "while true do end",
            ]),
        ], configuration: .init(policy: .init(presentUIDeadline: nil, presentUICPULimit: .milliseconds(300))))
        #expect(await fixture.runtime.join(guest) == .presentingUI)
        #expect(await fixture.runtime.presentUI(guest.ssid) == .failure)
        let presented = try #require(fixture.events.commands(.presentUI).last)
        #expect(presented.error?.contains("CPU time limit exceeded") == true, "\(presented.error ?? "")")
    }

    @Test func maintainWithAuthenticationRequiredAuthenticatesAgain() async throws {
        let fixture = try await RuntimeFixture(scripts: [
            "expiring": venue("Expiring", confidence: "high", handlers: [
                "authenticate": "cmd.store.logins = tostring((tonumber(cmd.store.logins) or 0) + 1) return 'success'",
                "maintain": "if cmd.store.logins == '1' then return 'authentication_required' end return 'success'",
            ]),
        ], configuration: .init(policy: .init(commandDeadline: .seconds(5), maintainInterval: .milliseconds(100))))
        #expect(await fixture.runtime.join(guest) == .authenticated)
        // Timers on a loaded 2-core machine: wait for the outcome, not for a fixed time.
        try await eventually("two maintain commands") { fixture.events.commands(.maintain).count >= 2 }
        #expect(fixture.runtime.stateDirectory.store(helper: "expiring", ssid: guest.ssid)["logins"] == "2")
        #expect(fixture.events.transitions.contains("maintaining>authenticating"))
        #expect(fixture.events.commands(.maintain).map(\.result).prefix(2) == [.authenticationRequired, .success], "\(fixture.events.commands(.maintain).map(\.error))")
        await fixture.runtime.leave(guest.ssid)
    }

    @Test func maintainWithAnyOtherResultEvaluatesAgain() async throws {
        let fixture = try await RuntimeFixture(scripts: [
            "moody": venue("Moody", confidence: "high", handlers: [
                "authenticate": "return 'success'",
                "maintain": "return 'failure'",
            ]),
        ])
        #expect(await fixture.runtime.join(guest) == .authenticated)
        #expect(await fixture.runtime.maintain(guest.ssid) == .authenticated)
        #expect(fixture.events.transitions.contains("maintaining>evaluating"))
    }

    @Test func logoffGoesToTheChosenHelperThenLeaves() async throws {
        let fixture = try await RuntimeFixture(scripts: ["venue": Self.accepting])
        #expect(await fixture.runtime.join(guest) == .authenticated)
        #expect(await fixture.runtime.logoff(guest.ssid) == .inactive)
        #expect(fixture.events.transitions.suffix(2) == ["authenticated>logging_off", "logging_off>inactive"])
        #expect(fixture.runtime.stateDirectory.store(helper: "venue", ssid: guest.ssid)["logged_off"] == "yes")
    }

    @Test func temporaryFailureRetriesWithBackoff() async throws {
        let fixture = try await RuntimeFixture(scripts: [
            "flaky": venue("Flaky", confidence: "high", handlers: [
                "authenticate": """
                    local tries = (tonumber(cmd.store.tries) or 0) + 1
                    cmd.store.tries = tostring(tries)
                    if tries < 3 then return 'temporary_failure' end
                    return 'success'
                    """,
            ]),
        ], configuration: .init(policy: .init(commandDeadline: .seconds(5), retryFirstDelay: .milliseconds(50))))
        #expect(await fixture.runtime.join(guest) == .failure)
        try await eventually("the retries to authenticate") { await fixture.runtime.state(of: guest.ssid) == .authenticated }
        let retries = fixture.events.logs.map(\.message).filter { $0.hasPrefix("retrying") }
        #expect(retries.count == 2)
        #expect(retries.last?.contains("0.1 seconds") == true)
        await fixture.runtime.leave(guest.ssid)
    }

    /// Every session's maintain and retry share one alarm, asleep until the earliest: a
    /// retry due before a pending maintain must wake it.
    @Test func aRetryDueBeforeAnotherNetworksMaintainComesOnTime() async throws {
        let claim = """
            cmd.network:set_confidence(cmd.network.ssid == NETWORK and "high" or "none")
            local response = cmd:create_response("success")
            response:set_network(cmd.network)
            response:deliver()
            """
        let fixture = try await RuntimeFixture(scripts: [
            "steady": venue("Steady", evaluate: claim.replacingOccurrences(of: "NETWORK", with: "'Steady'"),
                            handlers: ["authenticate": "return 'success'"]),
            "flaky": venue("Flaky", evaluate: claim.replacingOccurrences(of: "NETWORK", with: "'Flaky'"), handlers: [
                "authenticate": """
                    local tries = (tonumber(cmd.store.tries) or 0) + 1
                    cmd.store.tries = tostring(tries)
                    return tries < 2 and 'temporary_failure' or 'success'
                    """,
            ]),
        ], configuration: .init(policy: .init(commandDeadline: .seconds(5), maintainInterval: .seconds(60), retryFirstDelay: .milliseconds(100))))
        #expect(await fixture.runtime.join(NetworkDescription(ssid: "Steady")) == .authenticated)
        #expect(await fixture.runtime.join(NetworkDescription(ssid: "Flaky")) == .failure)
        try await eventually("the retry to authenticate Flaky") { await fixture.runtime.state(of: "Flaky") == .authenticated }
        #expect(await fixture.runtime.state(of: "Flaky") == .authenticated, "the retry came before the alarm's next maintain, 60 s on")
        #expect(await fixture.runtime.state(of: "Steady") == .authenticated)
        await fixture.runtime.stopTimers()
    }

    @Test func noRetryRunsAfterTheTimersStop() async throws {
        let fixture = try await RuntimeFixture(scripts: [
            "flaky": venue("Flaky", confidence: "high", handlers: ["authenticate": "return 'temporary_failure'"]),
        ], configuration: .init(policy: .init(commandDeadline: .seconds(5), retryFirstDelay: .milliseconds(50))))
        #expect(await fixture.runtime.join(guest) == .failure)
        await fixture.runtime.stopTimers()
        try await Task.sleep(for: .milliseconds(400))  // real time is the point: past the retry's delay
        #expect(fixture.events.commands(.authenticate).count == 1)
    }
}

@Suite struct ContractTests {
    @Test func invalidResultsAreFailuresNamingTheRule() async throws {
        let fixture = try await RuntimeFixture(scripts: [
            "wrong": venue("Wrong", confidence: "high", handlers: ["authenticate": "return 'authentication_required'"]),
        ])
        #expect(await fixture.runtime.join(guest) == .failure)
        let authenticate = try #require(fixture.events.commands(.authenticate).first)
        #expect(authenticate.result == .failure)
        #expect(authenticate.error == "result 'authentication_required' is not valid for authenticate: authentication_required is valid only for maintain")
    }

    @Test func handlersThatRaiseOrOverrunFail() async throws {
        let fixture = try await RuntimeFixture(scripts: [
            "raises": venue("Raises", confidence: "high", handlers: ["authenticate": "local form = nil\nreturn form.action"]),
        ], configuration: .init(policy: .init(commandDeadline: .milliseconds(300))))
        #expect(await fixture.runtime.join(guest) == .failure)
        let error = try #require(fixture.events.commands(.authenticate).first?.error)
        #expect(error.contains("raises.lua:"))
        #expect(error.contains("attempt to index a nil value"))
    }

    @Test func aHandlerWithoutAResponseHasAnsweredFailure() async throws {
        let fixture = try await RuntimeFixture(scripts: [
            "silent": venue("Silent", confidence: "high", handlers: ["authenticate": "local x = 1"]),
        ])
        #expect(await fixture.runtime.join(guest) == .failure)
        #expect(fixture.events.commands(.authenticate).first?.error == "no response delivered")
    }

    @Test func aHandlerReturningAStringThatIsNoResultIsToldSo() async throws {
        let fixture = try await RuntimeFixture(scripts: [
            "typo": venue("Typo", confidence: "high", handlers: ["authenticate": "return 'bogus'"]),
        ])
        #expect(await fixture.runtime.join(guest) == .failure)
        let error = try #require(fixture.events.commands(.authenticate).first?.error)
        #expect(error.hasPrefix("the handler returned unknown result 'bogus'; use one of success, failure, "), "\(error)")
    }

    @Test func aMissingHandlerAnswersCommandNotRecognized() async throws {
        let fixture = try await RuntimeFixture(scripts: ["partial": venue("Partial", confidence: "high")])
        #expect(await fixture.runtime.join(guest) == .failure)
        #expect(fixture.events.commands(.authenticate).first?.result == .commandNotRecognized)
    }

    @Test func deliverWorksOnceAndResultsAreChecked() async throws {
        let fixture = try await RuntimeFixture(scripts: [
            "twice": venue("Twice", confidence: "high", handlers: [
                "authenticate": "local r = cmd:create_response('success') r:deliver() r:deliver()",
            ]),
            "bogus": venue("Bogus", confidence: "low", handlers: ["authenticate": "cmd:create_response('great')"]),
        ])
        let twice = await fixture.send(.authenticate, to: await fixture.runtime.helpers.first { $0.id == "twice" }!, network: guest)
        #expect(twice.error?.contains("deliver() works once") == true)
        let bogus = await fixture.send(.authenticate, to: await fixture.runtime.helpers.first { $0.id == "bogus" }!, network: guest)
        #expect(bogus.error?.contains("unknown result 'great'") == true)
    }

    /// A delivered response is final: confidences and passwords set after `deliver()` do
    /// not change what the runtime gets.
    @Test func whatAHandlerSetsAfterDeliverDoesNotCount() async throws {
        let fixture = try await RuntimeFixture(scripts: [
            "fickle": venue("Fickle", evaluate: """
                cmd.network:set_confidence("low")
                local response = cmd:create_response("success")
                response:set_network(cmd.network)
                response:deliver()
                cmd.network:set_confidence("high")
                """, handlers: ["filter_scan_list": """
                local claimed = cmd.network_list[1]
                claimed:set_password("first")
                local response = cmd:create_response("success")
                response:set_network_list({ claimed })
                response:deliver()
                claimed:set_password("later")
                """]),
        ])
        let fickle = await fixture.runtime.helpers.first { $0.id == "fickle" }!
        let evaluated = await fixture.send(.evaluate, to: fickle, network: guest)
        #expect(evaluated.result == .success && evaluated.confidence == .low)
        let scanned = await fixture.send(.filterScanList, to: fickle, network: nil,
                                                 networkList: [guest, NetworkDescription(ssid: "Other")])
        #expect(scanned.claims == [ScannedNetwork(ssid: guest.ssid, bssid: guest.bssid, password: "first")])
    }

    @Test func contractMethodsCalledWithADotSayHowToCallThem() async throws {
        let fixture = try await RuntimeFixture(scripts: [
            "dotty": venue("Dotty", confidence: "high", handlers: ["authenticate": """
                local function failure(f) local ok, err = pcall(f) assert(not ok, "expected an error") return err end
                local r = cmd:create_response('success')
                for _, err in ipairs({
                  failure(function() cmd.network.set_confidence('high') end),
                  failure(function() cmd.network.set_password('latte') end),
                  failure(function() r.set_network(cmd.network) end),
                  failure(function() r.deliver() end),
                }) do assert(err:find('call it with a colon', 1, true), err) end
                r:set_network(cmd.network)
                r:deliver()
                """]),
            "dot": venue("Dot", confidence: "low", handlers: ["authenticate": "cmd.create_response('success')"]),
        ])
        let helpers = await fixture.runtime.helpers
        let dotty = await fixture.send(.authenticate, to: helpers.first { $0.id == "dotty" }!, network: guest)
        #expect(dotty.result == .success, "\(dotty.error ?? "")")
        let dot = await fixture.send(.authenticate, to: helpers.first { $0.id == "dot" }!, network: guest)
        let error = try #require(dot.error)
        #expect(error.contains("call it with a colon, as in cmd:create_response(\"success\")"))
        #expect(error.contains("dot.lua:"), "the error points at the script's line: \(error)")
    }

    @Test func aResponseTakesOnlyTheNetworksOfItsOwnCommand() async throws {
        let fixture = try await RuntimeFixture(scripts: [
            "keeper": venue("Keeper", confidence: "high", handlers: ["authenticate": """
                if kept == nil then
                  kept = cmd.network
                  return "temporary_failure"
                end
                cmd:create_response("success"):set_network(kept)
                """]),
        ])
        let keeper = try #require(await fixture.runtime.helpers.first)
        _ = await fixture.send(.authenticate, to: keeper, network: guest)
        let later = await fixture.send(.authenticate, to: keeper, network: guest)
        #expect(later.error?.contains("set_network expects a network from the command") == true, "\(later.error ?? "")")
    }

    @Test func theStoreTakesStringsWithinItsLimitAndCannotBeBypassed() async throws {
        let fixture = try await RuntimeFixture(scripts: [
            "hoarder": venue("Hoarder", confidence: "high", handlers: [
                "authenticate": """
                    cmd.store.a = "1"
                    local keys = {}
                    for k, v in pairs(cmd.store) do keys[#keys + 1] = k .. "=" .. v end
                    local _, state = pairs(cmd.store)
                    assert(state == nil, "pairs must not hand out the store's table")
                    assert(not pcall(function() cmd.store.n = 5 end), "numbers are refused")
                    local ok, err = pcall(function() cmd.store.big = ("x"):rep(20000) end)
                    assert(not ok and err:find("cmd.store is full"), err)
                    return table.concat(keys) == "a=1" and "success" or "failure"
                    """,
            ]),
        ])
        #expect(await fixture.runtime.join(guest) == .authenticated, "\(fixture.events.commands(.authenticate))")
        #expect(fixture.runtime.stateDirectory.store(helper: "hoarder", ssid: guest.ssid) == ["a": "1"])
    }

    @Test func commandsLeaveOutEmptyListsAndFalseFlagsWhichScriptsSeeAsEmpty() async throws {
        let fixture = try await RuntimeFixture(scripts: [
            "plain": venue("Plain", evaluate: """
                for k in pairs(cmd.store) do error("the store should be empty, has " .. k) end
                assert(cmd.store.token == nil)
                local ok, err = pcall(cmd.secret, cmd, "password")
                assert(not ok and err:find("cmd:secret is refused in evaluate"), err)
                cmd.network:set_confidence("high")
                local response = cmd:create_response("success")
                response:set_network(cmd.network)
                response:deliver()
                """),
        ])
        _ = await fixture.runtime.join(guest)
        let evaluated = try #require(fixture.events.commands(.evaluate).first)
        #expect(evaluated.result == .success && evaluated.confidence == .high, "\(evaluated)")
        // What the prelude keeps for cmd:http: this helper has hosts and no secrets, follows
        // no portal, and the network has no resolvers or probes.
        let helper = try #require(await fixture.runtime.helpers.first)
        let context = try #require(fixture.runtime.transport.context(for: helper, network: guest, command: .evaluate).tableValue)
        let keys = Set(context.entries.keys.compactMap(\.stringValue))
        #expect(keys.contains("hosts"))
        #expect(keys.isDisjoint(with: ["secrets", "resolvers", "probes", "capport_allow_http", "portal_hosts"]), "\(keys)")
    }

    @Test func filterScanListReturnsClaimsWithPasswordsAndDisplayNames() async throws {
        let fixture = try await RuntimeFixture(scripts: [
            "aroma": venue("Aroma Wi-Fi", handlers: ["filter_scan_list": """
                local claimed = {}
                for _, network in ipairs(cmd.network_list) do
                  if network.ssid:find('^Aroma') then
                    network:set_password('latte')
                    claimed[#claimed + 1] = network
                  end
                end
                local response = cmd:create_response('success')
                response:set_network_list(claimed)
                response:deliver()
                """]),
        ])
        let claims = await fixture.runtime.filterScanList([
            NetworkDescription(ssid: "Aroma-Guest"), NetworkDescription(ssid: "Airport-Free"),
        ])
        #expect(claims == [NetworkClaim(ssid: "Aroma-Guest", bssid: "", helper: "aroma", displayName: "Aroma Wi-Fi", password: "latte")])
    }

    @Test func aWatchedScanListIsFilteredAgainAndAgain() async throws {
        let fixture = try await RuntimeFixture(scripts: [
            "counter": venue("Counter", handlers: ["filter_scan_list": """
                local response = cmd:create_response('success')
                response:set_network_list(cmd.network_list)
                response:deliver()
                """]),
        ])
        let rounds = Counter()
        var seen: [[String]] = []
        for await claims in fixture.runtime.watchScanList(every: .milliseconds(20), scanList: {
            [NetworkDescription(ssid: "Round-\(rounds.next())")]
        }) {
            seen.append(claims.map(\.ssid))
            if seen.count == 3 { break }
        }
        #expect(seen == [["Round-1"], ["Round-2"], ["Round-3"]])
    }

    @Test func scriptProblemsAreReportedWithTheirLines() async throws {
        let directory = RuntimeFixture.temporaryDirectory()
        try """
            return {
              name = "A name far too long for the list",
              hosts = { "portal.example", "bad host!", "*" },
              evaluate = "not a function",
              authentcate = function() end,
            }
            """.write(toFile: directory + "/venue.lua", atomically: true, encoding: .utf8)
        try "return {\n  name = = 1 }".write(toFile: directory + "/syntax.lua", atomically: true, encoding: .utf8)
        let engine = try LuaEngine(HotspotRuntime.engineConfiguration())
        let (helpers, problems) = await HotspotRuntime.loadHelpers(at: directory, into: engine)
        #expect(helpers.isEmpty)
        let described = problems.map { "\(($0.location as NSString).lastPathComponent): \($0.message)" }
        #expect(described.contains { $0.hasPrefix("venue.lua:2: the display name") })
        #expect(described.contains { $0.hasPrefix("venue.lua:3: host pattern \"bad host!\"") })
        #expect(described.contains { $0.hasPrefix("venue.lua:3: host pattern \"*\"") })
        #expect(described.contains { $0.hasPrefix("venue.lua:4: the handler `evaluate` must be a function") })
        #expect(described.contains { $0.hasPrefix("venue.lua:5: unknown field `authentcate`") })
        #expect(described.contains { $0.hasPrefix("syntax.lua:2: ") })
    }
}

final class Counter: Sendable {
    private let value = PlainLock(0)
    func next() -> Int { value.withLock { $0 += 1; return $0 } }
}

@Suite struct PersistenceTests {
    @Test func aCorruptStateFileIsSetAsideAndReported() throws {
        let directory = RuntimeFixture.temporaryDirectory()
        try "{ not json".write(toFile: directory + "/state.json", atomically: true, encoding: .utf8)
        let state = try StateDirectory(path: directory)
        #expect(state.warnings.count == 1)
        #expect(state.warnings[0].contains("moved to"))
        let names = try FileManager.default.contentsOfDirectory(atPath: directory)
        #expect(names.contains { $0.hasPrefix("state.json.corrupt-") })
        try state.update { $0.autoJoinDisabled.insert("X") }
        #expect(try StateDirectory(path: directory).snapshot.autoJoinDisabled == ["X"])
    }

    @Test func theStoreSurvivesARestart() throws {
        let directory = RuntimeFixture.temporaryDirectory()
        try StateDirectory(path: directory).setStore(["token": "abc"], helper: "venue", ssid: "Guest")
        #expect(try StateDirectory(path: directory).store(helper: "venue", ssid: "Guest") == ["token": "abc"])
    }
}
