import Foundation
import LuaSandbox
import Testing
@testable import HotspotRuntime
import HotspotCore

@Suite("Helper catalog")
struct HelperCatalogTests {
    @Test func refreshLoadsWhatChangedAndKeepsTheLastGoodVersion() async throws {
        let directory = RuntimeFixture.temporaryDirectory()
        let engine = try LuaEngine(HotspotRuntime.engineConfiguration(workerCount: 1))
        defer { engine.shutdown() }
        let catalog = HelperCatalog(path: directory, engine: engine, retirementDelay: .milliseconds(10))
        try venue("One", confidence: "high").write(toFile: directory + "/one.lua", atomically: true, encoding: .utf8)
        try venue("Two").write(toFile: directory + "/two.lua", atomically: true, encoding: .utf8)
        #expect(await catalog.refresh() == HelperCatalog.Change(added: ["one", "two"]))
        #expect(await catalog.refresh() == HelperCatalog.Change(), "the same text is not loaded again")
        let first = try #require(await catalog.helpers.first?.state.handle)

        try venue("One again", confidence: "high").write(toFile: directory + "/one.lua", atomically: true, encoding: .utf8)
        #expect(await catalog.refresh() == HelperCatalog.Change(reloaded: ["one"]))
        #expect(await catalog.helpers.map(\.displayName) == ["One again", "Two"])

        try "return {\n  name = 'Broken', hosts = {},\n  evaluate = 'no',\n}".write(toFile: directory + "/one.lua", atomically: true, encoding: .utf8)
        let broken = await catalog.refresh()
        #expect(!broken.changesHelpers)
        #expect(broken.problems.map(\.location) == [directory + "/one.lua:3"])
        #expect(await catalog.helpers.map(\.displayName) == ["One again", "Two"], "the last good version stays")
        let lastGood = try #require(await catalog.helpers.first)
        try await eventually("the version reloaded over is retired") { (try? await engine.call(first, "describe").get()) == nil }
        #expect(try await engine.call(try #require(lastGood.state.handle), "describe").get().first?.tableValue?["name"] == "One again",
                "the last good version still answers")

        try FileManager.default.removeItem(atPath: directory + "/two.lua")
        #expect(await catalog.refresh().removed == ["two"])
        #expect(await catalog.helpers.map(\.id) == ["one"])
    }
}

@Suite("Replacing helpers")
struct ReplacingHelpersTests {
    /// A network keeps its session across a reload; when its helper is gone, the next
    /// maintain evaluates again and another helper takes it.
    @Test func aRemovedHelpersNetworkIsEvaluatedAgainAtItsNextMaintain() async throws {
        let fixture = try await RuntimeFixture(scripts: [
            "first": venue("First", confidence: "high", handlers: ["authenticate": "return 'success'", "maintain": "return 'success'"]),
            "second": venue("Second", confidence: "low", handlers: ["authenticate": "return 'success'"]),
        ])
        #expect(await fixture.runtime.join(guest) == .authenticated)
        #expect(await fixture.runtime.chosenHelper(of: guest.ssid) == "first")
        let second = try #require(await fixture.runtime.helpers.first { $0.id == "second" })
        await fixture.runtime.replaceHelpers([second])
        #expect(fixture.events.logs.contains { $0.message.contains("the helper first of Venue-Guest was removed") })
        #expect(await fixture.runtime.state(of: guest.ssid) == .authenticated)
        #expect(await fixture.runtime.maintain(guest.ssid) == .authenticated)
        #expect(await fixture.runtime.chosenHelper(of: guest.ssid) == "second")
        #expect(fixture.persistenceChosenHelper == "second")
    }

    /// A helper's own table is kept encoded from one command to the next; a reload that
    /// changes its hosts must reach its next command.
    @Test func aReloadedHelpersNewHostsReachItsNextCommand() async throws {
        func script(hosts: String) -> String {
            """
            return {
              name = "Venue", hosts = { \(hosts) },
              evaluate = function(cmd)
                local _, problem = cmd:http{ url = "http://127.0.0.1:1/" }
                log.info(problem)
                return "none"
              end,
            }
            """
        }
        let fixture = try await RuntimeFixture(scripts: ["venue": script(hosts: #""portal.example""#)])
        defer { fixture.engine.shutdown() }
        func problems() -> [String] { fixture.events.logs.filter { $0.helper == "venue" }.map(\.message) }
        #expect(await fixture.runtime.join(guest) == .authenticated)
        #expect(problems() == ["not_allowed: 127.0.0.1"])
        try script(hosts: #""127.0.0.1""#).write(toFile: fixture.scripts + "/venue.lua", atomically: true, encoding: .utf8)
        let catalog = HelperCatalog(path: fixture.scripts, engine: fixture.engine)
        await catalog.refresh()
        await fixture.runtime.replaceHelpers(await catalog.helpers)
        #expect(await fixture.runtime.join(guest) == .authenticated)
        #expect(problems().count == 2 && problems().last?.hasPrefix("not_allowed") == false, "\(problems())")
    }

    /// The encodings kept between commands are those of the helpers loaded now.
    @Test func aRemovedHelpersEncodingIsNotKept() async throws {
        let venue = #"return { name = "Venue", hosts = { "portal.example" }, evaluate = function(cmd) return "none" end }"#
        let fixture = try await RuntimeFixture(scripts: ["first": venue, "second": venue])
        defer { fixture.engine.shutdown() }
        #expect(await fixture.runtime.join(guest) == .authenticated)
        #expect(fixture.runtime.transport.encodedHelperIDs == ["first", "second"])
        try FileManager.default.removeItem(atPath: fixture.scripts + "/second.lua")
        let catalog = HelperCatalog(path: fixture.scripts, engine: fixture.engine)
        await catalog.refresh()
        await fixture.runtime.replaceHelpers(await catalog.helpers)
        #expect(fixture.runtime.transport.encodedHelperIDs == ["first"])
    }
}

extension RuntimeFixture {
    var persistenceChosenHelper: String? {
        (try? StateDirectory(path: stateDirectory))?.snapshot.chosenHelpers[guest.ssid]
    }
}

@Suite("Foundation-free replacements")
struct FoundationFreeReplacementsTests {
    @Test func numbersAreWrittenAsPrintfAndJSONWould() {
        let values = [0, 0.04, 0.06, 12.34, 12.96, -1.26, 999.96]
        #expect(values.map(\.withOneDecimal) == values.map { String(format: "%.1f", $0) })
        #expect([12, 12.5, -3, 1e20].map(\.plainDescription) == ["12", "12.5", "-3", "1e+20"])
    }
}
