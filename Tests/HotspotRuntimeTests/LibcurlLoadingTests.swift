import Foundation
import PortalSimulator
import Testing
@testable import HotspotRuntime
import HotspotCore
import HotspotNetwork

/// A worker opens libcurl on a thread of its own as it starts, so its scripts' first request
/// waits for no more than what is left of the load.
@Suite struct LibcurlLoadingTests {
    /// Read to the end: /proc files have no size, and a read sized by `stat` misses most of it.
    static func maps(_ library: String, in pid: Int32) throws -> Bool {
        let maps = try #require(FileHandle(forReadingAtPath: "/proc/\(pid)/maps")).readToEnd() ?? Data()
        return String(decoding: maps, as: UTF8.self).contains(library)
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
        let loadedBeforeAnyRequest = try await holds(within: .seconds(10)) {
            try workers.allSatisfy { try Self.maps("/libcurl.so.4", in: $0) }
        }
        let state = await fixture.runtime.join(guest)
        await portal.stop()
        fixture.engine.shutdown()

        #expect(loadedBeforeAnyRequest)
        #expect(state == .authenticated)
    }

    /// `connect --probe-url` starts loading libcurl before it parses its arguments, so one that
    /// stops at once on a usage error exits while the load runs. OpenSSL's exit handler,
    /// registered as the load initialised it, freed its state under the loading thread
    /// (SIGSEGV): each of these processes exits at a random moment after libcrypto is mapped,
    /// around OpenSSL's initialisation, and must exit cleanly.
    @Test(.serialized, arguments: 0..<100) func exitingWhileLibcurlLoadsIsClean(_ round: Int) async {
        await #expect(processExitsWith: .exitCode(0)) {
            BoundHTTPClient.loadLibraryInBackground()
            let giveUp = Date().addingTimeInterval(5)
            while Date() < giveUp, !(try LibcurlLoadingTests.maps("/libcrypto.so", in: getpid())) {}
            usleep(UInt32.random(in: 0...1_400))  // real time is the point: an exit at any moment of the load
            exit(0)
        }
    }
}
