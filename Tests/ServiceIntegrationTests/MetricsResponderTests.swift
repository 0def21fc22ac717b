import Foundation
import Testing
import TestSupport
@testable import ServiceIntegration

@Suite("Metrics responder")
struct MetricsResponderTests {
    static let exposition = "hotspot_helper_build_info{version=\"1\"} 1\n"
    /// Longer than any scrape takes on a loaded machine, so a stalled client is still there
    /// when the scrape beside it is answered; the scrapes give up sooner (`scrapeTimeout`),
    /// so a responder that waits for the stalled client fails the test instead of holding it.
    static let stalledClientDeadline: Duration = .seconds(60)
    static let scrapeTimeout = 20

    static func responder() throws -> MetricsResponder {
        try MetricsResponder(listening: try #require(.parse("127.0.0.1:0")), requestDeadline: stalledClientDeadline) {
            Array(Self.exposition.utf8)
        }
    }

    /// GET /metrics on a new connection; everything the responder sent until it closed, or
    /// until `scrapeTimeout` seconds passed.
    static func scrape(_ port: UInt16, from source: String = "127.0.0.1") throws -> String {
        let descriptor = try connectToLoopback(port, from: source)
        defer { close(descriptor) }
        var timeout = timeval(tv_sec: scrapeTimeout, tv_usec: 0)
        setsockopt(descriptor, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        let request = Array("GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n".utf8)
        _ = request.withUnsafeBytes { send(descriptor, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
        var answer: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 4096)
        while case let count = recv(descriptor, &chunk, chunk.count, 0), count > 0 { answer += chunk[0..<count] }
        return String(decoding: answer, as: UTF8.self)
    }

    /// A client that connects and sends nothing keeps its connection until the request's
    /// deadline; meanwhile another scrape is answered (one connection at a time, it waited
    /// for the stalled one to be given up).
    @Test func aStalledClientDoesNotHoldUpAScrape() async throws {
        let responder = try Self.responder()
        defer { responder.stop() }
        let port = responder.address.port
        let stalled = try connectToLoopback(port)
        defer { close(stalled) }
        let answer = try await onOwnThread { try Self.scrape(port) }
        #expect(answer.hasPrefix("HTTP/1.1 200 OK\r\n") && answer.hasSuffix("\r\n\r\n" + Self.exposition), "\(answer)")
        #expect(!isClosedByPeer(stalled), "the scrape was answered only once the stalled client was given up")
    }

    /// A client that sends nothing is given up at its request's deadline, its thread freed.
    @Test func aStalledClientIsGivenUpAtTheDeadline() async throws {
        let responder = try MetricsResponder(listening: try #require(.parse("127.0.0.1:0")), requestDeadline: .milliseconds(200)) {
            Array(Self.exposition.utf8)
        }
        defer { responder.stop() }
        let stalled = try connectToLoopback(responder.address.port)
        defer { close(stalled) }
        try await eventually("the stalled client to be closed") { isClosedByPeer(stalled) }
    }

    /// 24 clients sending a byte each once kept every scrape from being answered (8 slots,
    /// 2 s each, no fairness) and the fleet's `HotspotHelperDown` fired. One peer holds at most
    /// `maximumPerPeer` connections; past that its oldest stalled one is closed for the new
    /// one, so a scraper from the same address is still answered.
    @Test func stalledClientsOfOnePeerMakeRoomForItsScrape() async throws {
        let responder = try Self.responder()
        defer { responder.stop() }
        let port = responder.address.port
        let stalled = try (0..<24).map { _ in
            let descriptor = try connectToLoopback(port)
            _ = send(descriptor, "G", 1, Int32(MSG_NOSIGNAL))
            return descriptor
        }
        defer { stalled.forEach { close($0) } }
        let answer = try await onOwnThread { try Self.scrape(port) }
        #expect(answer.hasSuffix("\r\n\r\n" + Self.exposition), "\(answer)")
        try await eventually("all but the newest stalled connections of the peer closed") {
            stalled.filter { !isClosedByPeer($0) }.count <= MetricsResponder.maximumPerPeer
        }
    }

    /// Stalled clients from many peers fill every slot: a new connection closes the oldest
    /// stalled one, and a scrape from yet another peer is answered.
    @Test func stalledClientsOfManyPeersMakeRoomForAScrape() async throws {
        let responder = try Self.responder()
        defer { responder.stop() }
        let port = responder.address.port
        let stalled = try (0..<MetricsResponder.maximumConnections).map { try connectToLoopback(port, from: "127.0.0.\(2 + $0)") }
        defer { stalled.forEach { close($0) } }
        let answer = try await onOwnThread { try Self.scrape(port, from: "127.0.0.100") }
        #expect(answer.hasSuffix("\r\n\r\n" + Self.exposition), "\(answer)")
        try await eventually("the oldest stalled connection closed") { isClosedByPeer(stalled[0]) }
        #expect(stalled.dropFirst().allSatisfy { !isClosedByPeer($0) })
    }
}
