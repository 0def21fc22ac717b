import Foundation
import LuaSandbox
import ScriptLibraries
import Locking
import Testing
import TestSupport
@testable import HotspotRuntime
#if canImport(Glibc)
import Glibc
#endif

/// A loopback TCP server that hands its first connection to `serve` on a thread of its
/// own and records what it saw; it closes its sockets on that thread.
final class LoopbackTCPServer: Sendable {
    let port: Int
    /// `connected`, what `serve` noted, then `eof` when the client closed first.
    let seen = PlainLock<[String]>([])
    private let finished = DispatchSemaphore(value: 0)

    init(acceptWithin patience: Int32 = 3000, _ serve: @escaping @Sendable (Int32, LoopbackTCPServer) -> Void) {
        let (listener, port) = loopbackSocket(SOCK_STREAM)
        self.port = port
        listen(listener, 4)
        Thread { [self] in
            defer {
                close(listener)
                finished.signal()
            }
            var poller = pollfd(fd: listener, events: Int16(POLLIN), revents: 0)
            guard poll(&poller, 1, patience) == 1 else { return note("no connection") }
            let client = accept(listener, nil, nil)
            note("connected")
            serve(client, self)
            close(client)
        }.start()
    }

    func note(_ event: String) { seen.withLock { $0.append(event) } }

    /// Waits (on a thread of the caller's) until the serving thread is done.
    func waitUntilDone() async throws {
        try await onOwnThread { [finished] in _ = finished.wait(timeout: .now() + 10) }
    }

    /// Reads until the client closes, then notes `eof`.
    static func drain(_ client: Int32, _ server: LoopbackTCPServer) {
        var buffer = [UInt8](repeating: 0, count: 4096)
        while read(client, &buffer, buffer.count) > 0 {}
        server.note("eof")
    }

    static func send(_ client: Int32, _ text: String) {
        _ = text.withCString { write(client, $0, strlen($0)) }
    }
}

/// `cmd:tcp` and `cmd:udp` as venue scripts call them: the real prelude, the real socket
/// library, loopback servers on their own threads.
@Suite("cmd:tcp and cmd:udp against loopback servers")
struct SocketScriptTests {
    /// Runs `body` as an authenticate handler allowed `hosts`; returns what it stored in
    /// `cmd.store` (values are strings), or the error.
    func run(_ body: String, hosts: [String] = ["127.0.0.1"], resolvers: [String] = [],
             deadline: Duration = .seconds(5)) async throws -> Result<[String: String], LuaScriptError> {
        try await timedRun(body, hosts: hosts, resolvers: resolvers, deadline: deadline).result
    }

    /// `run`, and how long the call itself took (measured on its own thread, so a busy
    /// test pool does not count).
    func timedRun(_ body: String, hosts: [String] = ["127.0.0.1"], resolvers: [String] = [],
                  deadline: Duration) async throws -> (result: Result<[String: String], LuaScriptError>, elapsed: Duration) {
        let script = "return { authenticate = function(cmd)\n\(body)\nend }"
        return try await onOwnThread {
            let state = try SandboxedState(memoryLimit: 16 << 20, modules: ScriptLibraries.modules, prelude: HelperPrelude.source)
            _ = try state.load(ScriptSource(path: "venue.lua", text: script)).get()
            let command: LuaValue = [
                "type": "authenticate", "network": ["ssid": "Cafe"],
                "context": ["hosts": .table(LuaTable(array: hosts.map(LuaValue.text))),
                            "resolvers": .table(LuaTable(array: resolvers.map(LuaValue.text)))],
            ]
            let start = ContinuousClock.now
            let outcome = state.call("dispatch", [command], deadline: .after(deadline))
            let elapsed = ContinuousClock.now - start
            return (outcome.result.map { values in
                var stored: [String: String] = [:]
                for (key, value) in DispatchAnswer(values).store.tableValue?.entries ?? [:] {
                    stored[key.stringValue ?? ""] = value.stringValue ?? value.description
                }
                return stored
            }, elapsed)
        }
    }

    @Test func linesAndByteCountsThroughAnEchoServer() async throws {
        let server = LoopbackTCPServer { client, _ in
            var pending: [UInt8] = []
            var buffer = [UInt8](repeating: 0, count: 4096)
            while case let count = read(client, &buffer, buffer.count), count > 0 {
                pending += buffer[..<count]
                while let newline = pending.firstIndex(of: 10) {
                    let line = String(decoding: pending[..<newline], as: UTF8.self)
                    pending.removeFirst(newline + 1)
                    LoopbackTCPServer.send(client, line == "bytes" ? "0123456789" : "echo: \(line)\r\n")
                }
            }
        }
        let stored = try await run("""
            local conn, err = cmd:tcp('127.0.0.1', \(server.port), { timeout = 2 })
            assert(conn, err)
            cmd.store.sent = tostring(conn:send('hello\\n'))
            cmd.store.line = conn:receive()
            conn:send('again\\n')
            cmd.store.line2 = conn:receive('*l')
            conn:send('bytes\\n')
            cmd.store.first = conn:receive(4)
            cmd.store.rest = conn:receive(6)
            conn:close()
            local ok, message = pcall(conn.send, conn, 'x')
            cmd.store.after_close = message
            """).get()
        #expect(stored["sent"] == "6")
        #expect(stored["line"] == "echo: hello")
        #expect(stored["line2"] == "echo: again")
        #expect(stored["first"] == "0123")
        #expect(stored["rest"] == "456789")
        #expect(stored["after_close"]?.hasSuffix("attempt to use a closed tcp_connection") == true)
        try await server.waitUntilDone()
        #expect(server.seen.withLock { $0 } == ["connected"])
    }

    @Test func everythingUntilCloseAndTheEndOfTheStream() async throws {
        let server = LoopbackTCPServer { client, _ in LoopbackTCPServer.send(client, "line one\nlast without newline") }
        let stored = try await run("""
            local conn = assert(cmd:tcp('127.0.0.1', \(server.port)))
            cmd.store.one = conn:receive()
            cmd.store.all = conn:receive('*a')
            local none, message = conn:receive()
            cmd.store.closed = message
            """).get()
        #expect(stored["one"] == "line one")
        #expect(stored["all"] == "last without newline")
        #expect(stored["closed"]?.hasPrefix("closed: ") == true)
    }

    @Test func anOversizeLineIsTooLarge() async throws {
        let server = LoopbackTCPServer { client, _ in
            LoopbackTCPServer.send(client, String(repeating: "x", count: 70_000) + "\n")
        }
        let stored = try await run("""
            local conn = assert(cmd:tcp('127.0.0.1', \(server.port)))
            local line, message = conn:receive()
            cmd.store.message = message
            """).get()
        #expect(stored["message"]?.hasPrefix("too_large: a line from 127.0.0.1:\(server.port) longer than 65536 bytes") == true)
    }

    @Test func aHostOutsideTheAllowlistIsRefusedBeforeAnythingIsSent() async throws {
        let server = LoopbackTCPServer(acceptWithin: 500) { _, _ in }
        let stored = try await run("""
            local conn, message = cmd:tcp('127.0.0.1', \(server.port))
            cmd.store.tcp = message
            local session, udp_message = cmd:udp('portal.example', 53)
            cmd.store.udp = udp_message
            """, hosts: ["portal.example.com"]).get()
        #expect(stored["tcp"] == "not_allowed: 127.0.0.1")
        #expect(stored["udp"] == "not_allowed: portal.example")
        try await server.waitUntilDone()
        #expect(server.seen.withLock { $0 } == ["no connection"])
    }

    @Test func theDeadlineCutsAReceiveFromASilentServer() async throws {
        let server = LoopbackTCPServer { client, server in LoopbackTCPServer.drain(client, server) }
        let (stored, elapsed) = try await timedRun("""
            local conn = assert(cmd:tcp('127.0.0.1', \(server.port), { timeout = 30 }))
            local line, message = conn:receive()
            cmd.store.message = message
            """, deadline: .milliseconds(400))
        // The receive ends at the command's deadline with `timeout`; the hook may end the
        // call before the script stores the message.
        switch stored {
        case .success(let values): #expect(values["message"]?.hasPrefix("timeout: ") == true)
        case .failure(let error): #expect(error.kind == .deadlineExceeded)
        }
        #expect(elapsed < .seconds(2))
        try await server.waitUntilDone()
        #expect(server.seen.withLock { $0 } == ["connected", "eof"])
    }

    @Test func anOperationTimeoutIsANilAndAMessage() async throws {
        let server = LoopbackTCPServer { client, server in LoopbackTCPServer.drain(client, server) }
        let stored = try await run("""
            local conn = assert(cmd:tcp('127.0.0.1', \(server.port), { timeout = 0.2 }))
            local line, message = conn:receive(10)
            cmd.store.message = message
            """).get()
        #expect(stored["message"]?.hasPrefix("timeout: ") == true)
    }

    @Test func aForgottenSocketIsClosedWhenTheCallEnds() async throws {
        let server = LoopbackTCPServer { client, server in LoopbackTCPServer.drain(client, server) }
        let stored = try await run("""
            local conn = assert(cmd:tcp('127.0.0.1', \(server.port)))
            conn:send('left open')
            cmd.store.done = 'yes'
            """).get()
        #expect(stored["done"] == "yes")
        try await server.waitUntilDone()
        #expect(server.seen.withLock { $0 } == ["connected", "eof"])
    }

    @Test func socketsPerCommandAreBounded() async throws {
        let (listener, port) = loopbackSocket(SOCK_STREAM)
        listen(listener, 16)
        defer { close(listener) }
        let stored = try await run("""
            local open = {}
            for i = 1, 9 do
              local conn, message = cmd:tcp('127.0.0.1', \(port))
              if not conn then cmd.store.refused = i .. ' ' .. message break end
              open[i] = conn
            end
            """).get()
        #expect(stored["refused"] == "9 not_allowed: more than 8 sockets open in one command; close some first")
    }

    @Test func udpSessionsSendAndReceiveDatagrams() async throws {
        let (socket, port) = loopbackSocket(SOCK_DGRAM)
        Thread {
            defer { close(socket) }
            var timeout = timeval(tv_sec: 5, tv_usec: 0)
            setsockopt(socket, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
            var buffer = [UInt8](repeating: 0, count: 2048)
            var from = sockaddr_in()
            var length = socklen_t(MemoryLayout<sockaddr_in>.size)
            let count = withUnsafeMutablePointer(to: &from) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { recvfrom(socket, &buffer, buffer.count, 0, $0, &length) }
            }
            guard count > 0 else { return }
            let reply = Array("pong:".utf8) + buffer[..<count]
            _ = withUnsafePointer(to: &from) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { sendto(socket, reply, reply.count, 0, $0, length) }
            }
        }.start()
        let stored = try await run("""
            local session = assert(cmd:udp('127.0.0.1', \(port)))
            cmd.store.sent = tostring(session:send('ping\\0'))
            cmd.store.reply = session:receive(2)
            local nothing, message = session:receive(0.2)
            cmd.store.quiet = message
            """).get()
        #expect(stored["sent"] == "5")
        #expect(stored["reply"] == "pong:ping\0")
        #expect(stored["quiet"]?.hasPrefix("timeout: ") == true)
    }

    @Test func namesResolveThroughTheNetworksResolvers() async throws {
        let dns = TestDNSServer()
        defer { dns.stop() }
        let server = LoopbackTCPServer { client, _ in LoopbackTCPServer.send(client, "welcome\n") }
        let stored = try await run("""
            local conn = assert(cmd:tcp('gateway.portal.example', \(server.port)))
            cmd.store.greeting = conn:receive()
            local none, message = cmd:tcp('missing.nx', \(server.port))
            cmd.store.missing = message
            """, hosts: ["*.portal.example", "missing.nx"], resolvers: ["127.0.0.1:\(dns.port)"]).get()
        #expect(stored["greeting"] == "welcome")
        #expect(stored["missing"]?.hasPrefix("dns: ") == true)
        #expect(dns.queries.withLock { $0 } == ["gateway.portal.example", "missing.nx"])
    }

    @Test func misuseRaisesAnErrorAtTheScriptLine() async throws {
        let result = try await run("local x = 1\ncmd:tcp('127.0.0.1', 70000)")
        guard case .failure(let error) = result else { Issue.record("no error"); return }
        #expect(error.location == "venue.lua:3")
        #expect(error.message.contains("cmd:tcp expects a port from 1 to 65535"))
    }
}
