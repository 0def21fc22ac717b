import Foundation
import Testing
import TestSupport
@testable import HotspotSystem

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

    /// A blocking TCP connection to 127.0.0.1:`port`, from `source` (another loopback
    /// address is another peer).
    static func connect(_ port: UInt16, from source: String = "127.0.0.1") throws -> Int32 {
        let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var local = sockaddr_in()
        local.sin_family = sa_family_t(AF_INET)
        local.sin_addr.s_addr = inet_addr(source)
        _ = withUnsafePointer(to: &local) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard connected == 0 else {
            close(descriptor)
            throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .ECONNREFUSED)
        }
        return descriptor
    }

    /// GET /metrics on a new connection; everything the responder sent until it closed, or
    /// until `scrapeTimeout` seconds passed.
    static func scrape(_ port: UInt16, from source: String = "127.0.0.1") throws -> String {
        let descriptor = try connect(port, from: source)
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

    /// Whether the responder has closed `descriptor`, or reset it (without waiting).
    static func isClosed(_ descriptor: Int32) -> Bool {
        var byte: UInt8 = 0
        let count = recv(descriptor, &byte, 1, Int32(MSG_DONTWAIT))
        return count == 0 || (count < 0 && errno != EAGAIN)
    }

    /// A client that connects and sends nothing keeps its connection until the request's
    /// deadline; meanwhile another scrape is answered (one connection at a time, it waited
    /// for the stalled one to be given up).
    @Test func aStalledClientDoesNotHoldUpAScrape() async throws {
        let responder = try Self.responder()
        defer { responder.stop() }
        let port = responder.address.port
        let stalled = try Self.connect(port)
        defer { close(stalled) }
        let answer = try await onOwnThread { try Self.scrape(port) }
        #expect(answer.hasPrefix("HTTP/1.1 200 OK\r\n") && answer.hasSuffix("\r\n\r\n" + Self.exposition), "\(answer)")
        #expect(!Self.isClosed(stalled), "the scrape was answered only once the stalled client was given up")
    }

    /// A client that sends nothing is given up at its request's deadline, its thread freed.
    @Test func aStalledClientIsGivenUpAtTheDeadline() async throws {
        let responder = try MetricsResponder(listening: try #require(.parse("127.0.0.1:0")), requestDeadline: .milliseconds(200)) {
            Array(Self.exposition.utf8)
        }
        defer { responder.stop() }
        let stalled = try Self.connect(responder.address.port)
        defer { close(stalled) }
        try await eventually("the stalled client to be closed") { Self.isClosed(stalled) }
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
            let descriptor = try Self.connect(port)
            _ = send(descriptor, "G", 1, Int32(MSG_NOSIGNAL))
            return descriptor
        }
        defer { stalled.forEach { close($0) } }
        let answer = try await onOwnThread { try Self.scrape(port) }
        #expect(answer.hasSuffix("\r\n\r\n" + Self.exposition), "\(answer)")
        try await eventually("all but the newest stalled connections of the peer closed") {
            stalled.filter { !Self.isClosed($0) }.count <= MetricsResponder.maximumPerPeer
        }
    }

    /// Stalled clients from many peers fill every slot: a new connection closes the oldest
    /// stalled one, and a scrape from yet another peer is answered.
    @Test func stalledClientsOfManyPeersMakeRoomForAScrape() async throws {
        let responder = try Self.responder()
        defer { responder.stop() }
        let port = responder.address.port
        let stalled = try (0..<MetricsResponder.maximumConnections).map { try Self.connect(port, from: "127.0.0.\(2 + $0)") }
        defer { stalled.forEach { close($0) } }
        let answer = try await onOwnThread { try Self.scrape(port, from: "127.0.0.100") }
        #expect(answer.hasSuffix("\r\n\r\n" + Self.exposition), "\(answer)")
        try await eventually("the oldest stalled connection closed") { Self.isClosed(stalled[0]) }
        #expect(stalled.dropFirst().allSatisfy { !Self.isClosed($0) })
    }
}
