import Foundation
import PortalSimulator
import Testing
@testable import HotspotRuntime
import HotspotCore

/// A worker opens libcurl on a thread of its own as it starts, so its scripts' first request
/// waits for no more than what is left of the load.
@Suite struct LibcurlLoadingTests {
    /// Read to the end: /proc files have no size, and a read sized by `stat` misses most of it.
    static func mapsLibcurl(_ pid: Int32) throws -> Bool {
        let maps = try #require(FileHandle(forReadingAtPath: "/proc/\(pid)/maps")).readToEnd() ?? Data()
        return String(decoding: maps, as: UTF8.self).contains("/libcurl.so.4")
    }

    @Test func aWorkerLoadsLibcurlBeforeAnyScriptMakesARequest() async throws {
        let portal = try await SimulatedPortal.start(.clickThrough)
        let fixture = try await RuntimeFixture(scripts: ["cafe": """
            return {
              name = "Cafe",
              hosts = { "127.0.0.1" },
              evaluate = function(cmd) return "high" end,
              authenticate = function(cmd)
                local answer = cmd:http{ url = "\(portal.url)login", form = { accept_terms = "yes" } }
                return answer.status == 200 and "success" or "failure"
              end,
            }
            """])
        let workers = fixture.engine.workerProcessIDs
        #expect(!workers.isEmpty)
        // No command has run yet: only the background load can have mapped it.
        let loadedEnd = Date().addingTimeInterval(10)
        var loadedBeforeAnyRequest = try workers.map(Self.mapsLibcurl)
        while !loadedBeforeAnyRequest.allSatisfy({ $0 }), Date() < loadedEnd {
            try await Task.sleep(for: .milliseconds(10))
            loadedBeforeAnyRequest = try workers.map(Self.mapsLibcurl)
        }
        let state = await fixture.runtime.join(guest)
        await portal.stop()
        fixture.engine.shutdown()

        #expect(loadedBeforeAnyRequest.allSatisfy { $0 })
        #expect(state == .authenticated)
    }
}
