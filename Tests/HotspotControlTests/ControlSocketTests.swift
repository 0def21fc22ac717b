import Foundation
import Locking
import Testing
import TestSupport
@testable import HotspotControl

@Suite("Control socket")
struct ControlSocketTests {
    @Test func answersRequestsOnAnOwnerOnlySocketAndRefusesASecondServer() async throws {
        let path = try scratchDirectory("state") + "/" + ControlServer.fileName
        let seen = PlainLock<[ControlRequest]>([])
        let server = try ControlServer(path: path) { request in
            seen.withLock { $0.append(request) }
            return ControlReply(ok: true, message: "did \(request.command.rawValue)", state: .authenticated)
        }
        let mode = try #require(FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? Int)
        #expect(mode == 0o600)
        let request = ControlRequest(command: .ui, network: "Cafe", answers: ["email": "a@example.org"])
        // Clients block: on threads of their own, never one of those the handler's task needs.
        let reply = try await onOwnThread { try ControlClient.send(request, to: path) }
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

        let answer = try await onOwnThread { () throws -> String in
            let descriptor = try ControlServer.connect(path)
            defer { close(descriptor) }
            _ = ControlServer.writeAll(descriptor, Array("not json\n".utf8))
            return Self.answer(on: descriptor)
        }
        #expect(answer.contains("not a control request in JSON"))
        #expect(answer.contains("\"ok\":false"))
    }

    /// What the daemon answers a raw client (for the tests of misbehaving clients).
    static func answer(on descriptor: Int32) -> String {
        guard case .line(let line) = ControlServer.readLine(descriptor, limit: 4096) else { return "" }
        return String(decoding: line, as: UTF8.self)
    }

    /// A client sending a byte now and then is cut off at the request's deadline, counted
    /// from its connection, not from its last byte (each byte used to restart a 5 s wait).
    @Test func aTricklingClientIsCutOffAtTheWholeRequestsDeadline() async throws {
        let path = try scratchDirectory("state") + "/" + ControlServer.fileName
        var limits = ControlServer.Limits()
        limits.requestDeadline = .milliseconds(600)
        let server = try ControlServer(path: path, limits: limits) { _ in ControlReply(ok: true, message: "fine") }
        defer { server.stop() }
        let (answer, took) = try await onOwnThread { () throws -> (String, Duration) in
            let descriptor = try ControlServer.connect(path)
            defer { close(descriptor) }
            let start = ContinuousClock.now
            for byte in Array(#"{"command":"#.utf8) {
                // Real time is what is tested: a byte every 100 ms, for longer than the deadline.
                guard ControlServer.writeAll(descriptor, [byte]) else { break }
                usleep(100_000)
            }
            return (Self.answer(on: descriptor), ContinuousClock.now - start)
        }
        #expect(answer.contains("no complete request line within 0.6 seconds"), "\(answer)")
        #expect(took < .seconds(2), "cut off after \(took)")
    }

    /// Connections past the limit are refused at once, and the socket serves again once they
    /// are gone (that they hold no thread each is tested on the daemon, in DaemonTests).
    @Test func connectionsPastTheLimitAreRefusedAtOnce() async throws {
        let path = try scratchDirectory("state") + "/" + ControlServer.fileName
        var limits = ControlServer.Limits()
        limits.maximumConnections = 40
        let server = try ControlServer(path: path, limits: limits) { _ in ControlReply(ok: true, message: "fine") }
        defer { server.stop() }
        let idle = try (0..<40).map { _ in try ControlServer.connect(path) }
        let refused = try ControlServer.connect(path)
        let answer = try await onOwnThread { Self.answer(on: refused) }
        close(refused)
        #expect(answer.contains("the daemon is serving 40 control connections already"), "\(answer)")
        idle.forEach { close($0) }
        try await eventually("the idle connections to be gone") {
            let reply = try? await onOwnThread {
                try ControlClient.send(ControlRequest(command: .logoff, network: "Cafe"), to: path, timeout: .seconds(5))
            }
            return reply?.ok == true
        }
    }

    @Test func aRequestCutShortSaysSoRatherThanNotJSON() async throws {
        let path = try scratchDirectory("state") + "/" + ControlServer.fileName
        let server = try ControlServer(path: path) { _ in ControlReply(ok: true, message: "fine") }
        defer { server.stop() }
        let answer = try await onOwnThread { () throws -> String in
            let descriptor = try ControlServer.connect(path)
            defer { close(descriptor) }
            _ = ControlServer.writeAll(descriptor, Array(#"{"command":"logoff""#.utf8))
            shutdown(descriptor, Int32(SHUT_WR))
            return Self.answer(on: descriptor)
        }
        #expect(answer.contains("the request ended without its newline"), "\(answer)")
    }

    /// A `ui` request whose client hangs up is cancelled (the person gave up); any other
    /// request runs to its end, so a client going away leaves no change half made.
    @Test func aHangUpCancelsAUIRequestOnly() async throws {
        let path = try scratchDirectory("state") + "/" + ControlServer.fileName
        let ended = PlainLock<[ControlRequest.Command: Bool]>([:])  // command: whether it was cancelled
        let server = try ControlServer(path: path) { request in
            try? await Task.sleep(for: .seconds(1))  // real time is the point: work a hang-up comes during, ended early by a cancel
            ended.withLock { $0[request.command] = Task.isCancelled }
            return ControlReply(ok: true, message: "done")
        }
        defer { server.stop() }
        for command in [ControlRequest.Command.ui, .logoff] {
            try await onOwnThread {
                let descriptor = try ControlServer.connect(path)
                _ = ControlServer.writeAll(descriptor, Array(#"{"command":"\#(command.rawValue)","network":"Cafe"}"#.utf8) + [10])
                close(descriptor)
            }
        }
        try await eventually("both requests ended") { ended.withLock { $0.count } == 2 }
        #expect(ended.withLock { $0 } == [.ui: true, .logoff: false])
    }

    @Test func aPathTooLongForASocketIsAClearError() {
        let path = "/tmp/" + String(repeating: "d", count: 120) + "/control.sock"
        #expect {
            try ControlServer(path: path) { _ in ControlReply(ok: true, message: "") }
        } throws: { error in
            (error as? ControlSocketError)?.description.contains("use a shorter --state-dir") == true
        }
    }

    /// A reply over the 64 KiB a request may have (a status with many helpers, or questions
    /// of many choices) once broke `status`, `ui` and the person's page with "no reply within
    /// 120 seconds"; it is written whole, past what the socket's buffer takes at once, and read
    /// whole. The watch stream carries an event as large.
    @Test func repliesAndEventsOfSeveralMebibytesArriveWhole() async throws {
        let path = try scratchDirectory("state") + "/" + ControlServer.fileName
        // 1 MB: sixteen times the old cap, and several times what the socket takes at once.
        let large = String(repeating: "venue ", count: 170_000)
        let server = try ControlServer(path: path) { _ in ControlReply(ok: true, message: large) }
        defer { server.stop() }
        // The default wait: encoding the reply takes a loaded machine's test run a while.
        let reply = try await onOwnThread { try ControlClient.send(ControlRequest(command: .status), to: path) }
        #expect(reply.message == large)

        let watch = try await onOwnThread { try ControlClient.Watch(path: path) }
        defer { watch.stop() }
        let event = Array(#"{"event":"log","message":"\#(large)"}"#.utf8)
        // The daemon counts the watcher before its reply is written: the event is not dropped.
        server.publish(event)
        var lines = watch.lines.makeAsyncIterator()
        #expect(await lines.next() == event)
    }

    /// Each way a reply can fail to come says what happened, not "no reply within 120 s".
    @Test func aMissingReplySaysWhatHappened() async throws {
        let path = try scratchDirectory("state") + "/" + ControlServer.fileName
        let listener = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(listener) }
        var address = try ControlServer.address(path)
        _ = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(listener, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        #expect(listen(listener, 4) == 0)
        // A peer that reads the request, then writes part of a line, or nothing, and closes.
        for (partial, expected) in [("", "the daemon closed the connection without a reply"),
                                    (#"{"ok":tr"#, "the daemon closed the connection after 8 bytes of its reply")] {
            let served = Thread {
                let connection = accept(listener, nil, nil)
                var request = [UInt8](repeating: 0, count: 4096)
                _ = read(connection, &request, request.count)
                _ = ControlServer.writeAll(connection, Array(partial.utf8))
                close(connection)
            }
            served.start()
            let message = try await onOwnThread { () -> String in
                do {
                    _ = try ControlClient.send(ControlRequest(command: .status), to: path, timeout: .seconds(10))
                    return "replied"
                } catch {
                    return "\(error)"
                }
            }
            #expect(message == expected)
        }
    }
}
