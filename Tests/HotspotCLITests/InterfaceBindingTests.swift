import Foundation
import Testing
import TestSupport
#if canImport(Glibc)
import Glibc
#endif

@Suite("Interface binding in network namespaces", .serialized,
       .enabled(if: TwoNetworks.unavailableReason == nil, Comment(rawValue: TwoNetworks.unavailableReason ?? "")))
struct InterfaceBindingTests {
    /// Fetches `url` in authenticate and reports the body (or the error) in a log line.
    static func script(fetching url: String) -> String {
        """
        return {
          name = "Fetcher",
          hosts = { "198.18.1.1", "portal.test" },
          evaluate = function(cmd) return "high" end,
          authenticate = function(cmd)
            local response, problem = cmd:http{ url = "\(url)", timeout = 3 }
            log.info("answer: " .. (response and response.body or problem))
            return "success"
          end,
        }
        """
    }

    func answer(_ run: CLI.Run) -> String? {
        run.events.compactMap { $0.message }.first { $0.hasPrefix("answer: ") }.map { String($0.dropFirst(8)) }
    }

    @Test func aBoundRequestLeavesByItsInterfaceWhateverTheRoutesSay() async throws {
        let networks = try await onOwnThread { try TwoNetworks() }
        let directory = try CLI.temporaryDirectory(scripts: ["fetcher.lua": Self.script(fetching: "http://198.18.1.1/")])
        let routed = try await networks.runInClient(["connect", "--scripts", directory, "--json"])
        #expect(answer(routed) == "host A")
        let boundB = try await networks.runInClient(["connect", "--scripts", directory, "--interface", networks.interfaceB, "--json"])
        #expect(answer(boundB) == "host B")
        let boundA = try await networks.runInClient(["connect", "--scripts", directory, "--interface", networks.interfaceA, "--json"])
        #expect(answer(boundA) == "host A")
    }

    @Test func namesResolveThroughTheBoundNetworksResolver() async throws {
        let networks = try await onOwnThread { try TwoNetworks() }
        let directory = try CLI.temporaryDirectory(scripts: ["fetcher.lua": Self.script(fetching: "http://portal.test/")])
        // Both resolvers are 198.18.1.1; only the interface decides which one answers.
        let viaB = try await networks.runInClient(["connect", "--scripts", directory, "--interface", networks.interfaceB,
                                             "--resolver", "198.18.1.1", "--json"])
        #expect(answer(viaB) == "host B")
        let viaA = try await networks.runInClient(["connect", "--scripts", directory, "--interface", networks.interfaceA,
                                             "--resolver", "198.18.1.1", "--json"])
        #expect(answer(viaA) == "host A")
    }
}
