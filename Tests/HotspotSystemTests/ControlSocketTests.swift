import Foundation
import Synchronization
import Testing
import TestSupport
@testable import HotspotSystem

@Suite("Control socket")
struct ControlSocketTests {
    @Test func answersRequestsOnAnOwnerOnlySocketAndRefusesASecondServer() async throws {
        let path = try scratchDirectory("state") + "/" + ControlServer.fileName
        let seen = Mutex<[ControlRequest]>([])
        let server = try ControlServer(path: path) { request in
            seen.withLock { $0.append(request) }
            return ControlReply(ok: true, message: "did \(request.command.rawValue)", state: .authenticated)
        }
        let mode = try #require(FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? Int)
        #expect(mode == 0o600)
        let request = ControlRequest(command: .ui, network: "Cafe", answers: ["email": "a@example.org"])
        let reply = try await Task.detached { try ControlClient.send(request, to: path) }.value
        #expect(reply == ControlReply(ok: true, message: "did ui", state: .authenticated))
        #expect(seen.withLock { $0 } == [request])

        #expect(throws: ControlSocketError.self) { try ControlServer(path: path) { _ in ControlReply(ok: true, message: "") } }

        server.stop()
        #expect(!FileManager.default.fileExists(atPath: path))
        #expect(throws: ControlSocketError.self) { try ControlClient.send(request, to: path) }
    }

    @Test func aStaleSocketFileIsReplacedAndGarbageIsRefused() async throws {
        let path = try scratchDirectory("state") + "/" + ControlServer.fileName
        // A socket file nobody listens on, as a killed daemon leaves it.
        let stale = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        var address = try ControlServer.address(path)
        _ = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(stale, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        close(stale)
        #expect(FileManager.default.fileExists(atPath: path))
        let server = try ControlServer(path: path) { _ in ControlReply(ok: true, message: "fine") }
        defer { server.stop() }

        let answer = try await Task.detached { () throws -> String in
            let descriptor = try ControlServer.connect(path)
            defer { close(descriptor) }
            _ = ControlServer.writeAll(descriptor, Array("not json\n".utf8))
            return String(decoding: ControlServer.readLine(descriptor, limit: 4096) ?? [], as: UTF8.self)
        }.value
        #expect(answer.contains("not a control request in JSON"))
        #expect(answer.contains("\"ok\":false"))
    }

    @Test func aPathTooLongForASocketIsAClearError() {
        let path = "/tmp/" + String(repeating: "d", count: 120) + "/control.sock"
        #expect {
            try ControlServer(path: path) { _ in ControlReply(ok: true, message: "") }
        } throws: { error in
            (error as? ControlSocketError)?.description.contains("use a shorter --state-dir") == true
        }
    }
}
