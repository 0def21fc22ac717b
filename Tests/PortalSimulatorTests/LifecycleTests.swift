import Foundation
import PortalSimulator
import Testing
import TestSupport

#if canImport(Glibc)
import Glibc
#endif

/// Starting and stopping, several portals at once, and the DNS responder.
@Suite(.serialized) struct LifecycleTests {
    @Test func severalScenariosRunSideBySideAndStopCleanly() async throws {
        let clickThrough = try await SimulatedPortal.start(.clickThrough)
        let credentials = try await SimulatedPortal.start(.credentials)
        #expect(clickThrough.port != credentials.port)
        #expect(clickThrough.url == "http://127.0.0.1:\(clickThrough.port)/")
        #expect(try await Device(clickThrough).post("/login", [("accept_terms", "yes")]).status == 200)
        #expect(try await Device(clickThrough).get("/generate_204").status == 204)
        #expect(try await Device(credentials).get("/generate_204").status == 302)  // its own sessions
        await clickThrough.stop()
        await clickThrough.stop()
        await #expect(throws: (any Error).self) { try await Device(clickThrough).get("/generate_204") }
        #expect(try await Device(credentials).get("/generate_204").status == 302)
        await credentials.stop()
    }

    @Test func aTakenPortIsAnError() async throws {
        try await withPortal(.clickThrough) { portal async throws in
            await #expect(throws: (any Error).self) { try await SimulatedPortal.start(.email, port: portal.port) }
        }
    }

    @Test func stoppingEndsADripInProgress() async throws {
        let portal = try await SimulatedPortal.start(.hostile)
        let connection = try RawHTTPConnection(port: portal.port, request: "GET /drip HTTP/1.1\r\nHost: portal.aroma.example\r\n\r\n")
        defer { connection.close() }
        // Stopped only once the drip is under way: the chunk of its first byte has arrived.
        let started = try await onOwnThread { connection.read(until: "\r\n1\r\n<\r\n") }
        #expect(started.hasPrefix("HTTP/1.1 200") && started.hasSuffix("\r\n1\r\n<\r\n"), "\(started)")
        let clock = ContinuousClock()
        let stopping = clock.now
        await portal.stop()
        // Sooner than the 2 s after which busy connections are cancelled: the drip ended itself,
        // with the last chunk of a complete response, well before the 5 s the read waits.
        let rest = try await onOwnThread { connection.read(until: "0\r\n\r\n") }
        #expect(stopping.duration(to: clock.now) < .milliseconds(1500))
        #expect((started + rest).hasSuffix("\r\n0\r\n\r\n"), "\(rest)")
    }

    @Test func dnsAnswersEveryAQueryWithTheListeningAddress() async throws {
        try await withPortal(.clickThrough, dnsPort: 0) { portal async throws in
            let dns = try #require(portal.dns)
            #expect(dns.answer == "127.0.0.1")
            for name in ["portal.aroma.example", "connectivitycheck.gstatic.com", "x"] {
                let reply = try DNSQuery(name: name, type: 1).send(to: dns.port)
                #expect(reply.answersTheQuery && reply.responseCode == 0)
                #expect(reply.answerCount == 1)
                #expect(reply.bytes.suffix(4) == [127, 0, 0, 1])
            }
            let aaaa = try DNSQuery(name: "portal.aroma.example", type: 28).send(to: dns.port)
            #expect(aaaa.answersTheQuery && aaaa.responseCode == 0 && aaaa.answerCount == 0)
        }
    }

    @Test func dnsAnswerIsConfigurable() async throws {
        let dns = try await DNSResponder.start(answer: "127.0.0.9")
        let reply = try DNSQuery(name: "login.aroma.example", type: 1).send(to: dns.port)
        #expect(reply.answerCount == 1 && reply.bytes.suffix(4) == [127, 0, 0, 9])
        await dns.stop()
        await #expect(throws: SimulatorError.self) { try await DNSResponder.start(answer: "300.1.2.3") }
        await #expect(throws: SimulatorError.self) { try await DNSResponder.start(answer: "portal.aroma.example") }
    }
}

/// A DNS query sent over a real UDP socket.
struct DNSQuery {
    let name: String
    let type: UInt16
    let id = UInt16.random(in: 1...UInt16.max)

    struct Reply {
        let bytes: [UInt8]
        let id: UInt16
        let question: ArraySlice<UInt8>

        var responseCode: UInt8 { bytes[3] & 0x0F }
        var answerCount: Int { Int(bytes[6]) << 8 | Int(bytes[7]) }

        /// A response (QR set) with the query's ID, echoing the question.
        var answersTheQuery: Bool {
            bytes[2] & 0x80 != 0 && UInt16(bytes[0]) << 8 | UInt16(bytes[1]) == id
                && bytes.count >= 12 + question.count && bytes[12..<(12 + question.count)] == question
        }
    }

    var question: [UInt8] {
        name.split(separator: ".").flatMap { [UInt8($0.utf8.count)] + Array($0.utf8) } + [0, UInt8(type >> 8), UInt8(type & 0xFF), 0, 1]
    }

    func send(to port: Int) throws -> Reply {
        let query = [UInt8(id >> 8), UInt8(id & 0xFF), 0x01, 0x00, 0, 1, 0, 0, 0, 0, 0, 0] + question
        let (socket, sent) = toLoopback(SOCK_DGRAM, port: port, receiveTimeout: 2) { socket, address, length in
            sendto(socket, query, query.count, 0, address, length)
        }
        defer { close(socket) }
        guard sent == query.count else { throw ProcessFailure(description: "sendto failed: errno \(errno)") }
        var buffer = [UInt8](repeating: 0, count: 512)
        let received = recv(socket, &buffer, buffer.count, 0)
        guard received >= 12 else { throw ProcessFailure(description: "no DNS reply: errno \(errno)") }
        return Reply(bytes: Array(buffer[0..<received]), id: id, question: question[...])
    }
}

/// A new socket whose reads give up after `receiveTimeout` seconds, and what `body` returned
/// given it and the address of 127.0.0.1:`port`.
func toLoopback<Result>(_ type: __socket_type, port: Int, receiveTimeout: Int,
                        _ body: (Int32, UnsafePointer<sockaddr>, socklen_t) -> Result) -> (socket: Int32, result: Result) {
    let socket = Glibc.socket(AF_INET, Int32(type.rawValue), 0)
    var timeout = timeval(tv_sec: receiveTimeout, tv_usec: 0)
    setsockopt(socket, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_port = in_port_t(UInt16(port).bigEndian)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    let result = withUnsafePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { body(socket, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
    }
    return (socket, result)
}

/// An HTTP exchange over a plain TCP socket on loopback, read as the bytes arrive.
final class RawHTTPConnection: Sendable {
    private let socket: Int32

    init(port: Int, request: String) throws {
        let connected: Int32
        (socket, connected) = toLoopback(SOCK_STREAM, port: port, receiveTimeout: 5) { connect($0, $1, $2) }
        guard connected == 0, send(socket, request, request.utf8.count, Int32(MSG_NOSIGNAL)) == request.utf8.count else {
            close()
            throw ProcessFailure(description: "cannot send to 127.0.0.1:\(port): errno \(errno)")
        }
    }

    /// Reads until `marker` has arrived, the connection ends, or 5 s pass; returns what this
    /// read received.
    func read(until marker: String) -> String {
        let end = ContinuousClock.now + .seconds(5)
        var received: [UInt8] = []
        var byte: UInt8 = 0
        while !received.ends(with: marker.utf8), ContinuousClock.now < end, recv(socket, &byte, 1, 0) == 1 {
            received.append(byte)
        }
        return String(decoding: received, as: UTF8.self)
    }

    func close() { Glibc.close(socket) }
}

private extension Array where Element == UInt8 {
    func ends(with suffix: String.UTF8View) -> Bool {
        count >= suffix.count && self[(count - suffix.count)...].elementsEqual(suffix)
    }
}
