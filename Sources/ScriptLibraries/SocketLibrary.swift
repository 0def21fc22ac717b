public import LuaSandbox
import HotspotNetwork
import ScriptContract

/// The host side of `cmd:tcp` and `cmd:udp`. Private to the prelude, which passes the
/// command's context (the script's `hosts`, the network's interface and resolvers):
/// `socket.tcp(context, host, port, options)` and `socket.udp(...)` answer a
/// `tcp_connection` or `udp_session` object, or `nil, message`. The objects live at most
/// until the end of the command's call, so a forgotten socket is closed then.
public enum SocketLibrary {
    /// Sockets one command may hold open at once.
    static let maximumOpen = 8
    static let largestReceive = 1 << 20
    static let largestLine = 64 << 10
    static let defaultTimeout = Duration.seconds(10)

    public static let module = HostModule.library(.socket, functions: [
        ("tcp", { call in try open(.tcp, as: connection, call) }),
        ("udp", { call in try open(.udp, as: session, call) }),
    ])

    /// A socket and the timeout its operations have unless told otherwise.
    final class Endpoint: Sendable {
        let socket: BoundSocket
        let timeout: Duration

        init(_ socket: BoundSocket, timeout: Duration) {
            self.socket = socket
            self.timeout = timeout
        }
    }

    static let connection = HostClass<Endpoint>("tcp_connection", lifetime: .call, methods: [
        ("send", send),
        ("receive", { endpoint, call in
            let amount: BoundSocket.Amount
            switch call[0] {
            case .nil, "*l": amount = .line(maximum: largestLine)
            case "*a": amount = .all(maximum: largestReceive)
            case let value:
                guard let count = value.integerValue, (1...Int64(largestReceive)).contains(count) else {
                    throw call.badArgument(0, "\"*l\", \"*a\" or a byte count from 1 to \(largestReceive) expected")
                }
                amount = .bytes(Int(count))
            }
            return perform(call, timeout: endpoint.timeout) { end, isCancelled throws(HTTPFailure) in
                .string(try endpoint.socket.receive(amount, end: end, isCancelled: isCancelled))
            }
        }),
    ], close: { $0.socket.close() })

    static let session = HostClass<Endpoint>("udp_session", lifetime: .call, methods: [
        ("send", send),
        ("receive", { endpoint, call in
            let timeout = try call[0].isNil ? endpoint.timeout : seconds(call[0], "udp_session:receive: the timeout")
            return perform(call, timeout: timeout) { end, isCancelled throws(HTTPFailure) in
                .string(try endpoint.socket.receive(.datagram(maximum: BoundSocket.largestDatagram), end: end,
                                                    isCancelled: isCancelled))
            }
        }),
    ], close: { $0.socket.close() })

    static func open(_ transport: BoundSocket.Transport, as hostClass: HostClass<Endpoint>,
                     _ call: borrowing HostCall) throws -> [LuaValue] {
        let name = "cmd:\(transport.rawValue)"
        let context = HelperContext(try call.table(0))
        guard let host = call[1].stringValue, !host.isEmpty else { throw HostError("\(name) expects a host name or address") }
        guard let port = call[2].integerValue, (1...65535).contains(port) else {
            throw HostError("\(name) expects a port from 1 to 65535, got \(call[2])")
        }
        guard call[3].isNil || call[3].tableValue != nil else { throw HostError("\(name): the options must be a table") }
        let options = call[3].tableValue ?? LuaTable()
        let timeout = try options["timeout"].isNil ? defaultTimeout : seconds(options["timeout"], "\(name): 'timeout'")
        guard call.openObjects(of: connection) + call.openObjects(of: session) < maximumOpen else {
            return [.nil, .text("not_allowed: more than \(maximumOpen) sockets open in one command; close some first")]
        }
        let client = HTTPLibrary.client(for: context)
        return perform(call, timeout: timeout) { end, isCancelled throws(HTTPFailure) in
            let socket = try BoundSocket.open(transport, host: host, port: UInt16(port), binding: client.binding,
                                              allowedHosts: client.allowedHosts, end: end, isCancelled: isCancelled)
            return hostClass.object(Endpoint(socket, timeout: timeout))
        }
    }

    static func send(_ endpoint: Endpoint, _ call: borrowing HostCall) throws -> [LuaValue] {
        let bytes = try call.bytes(0)
        return perform(call, timeout: endpoint.timeout) { end, isCancelled throws(HTTPFailure) in
            .integer(Int64(try endpoint.socket.send(bytes, end: end, isCancelled: isCancelled)))
        }
    }

    /// Runs a socket operation until the earlier of `timeout` and the call's deadline;
    /// a failure is `nil, message`.
    static func perform(_ call: borrowing HostCall, timeout: Duration,
                        _ operation: (ContinuousClock.Instant, () -> Bool) throws(HTTPFailure) -> LuaValue) -> [LuaValue] {
        let timeoutEnd = ContinuousClock.now.advanced(by: timeout)
        let end = call.networkDeadline.map { min(timeoutEnd, $0) } ?? timeoutEnd
        let isCancelled = call.interruptionCheck
        do throws(HTTPFailure) {
            return [try operation(end, isCancelled)]
        } catch {
            return [.nil, .text(error.description)]
        }
    }

    static func seconds(_ value: LuaValue, _ what: String) throws(HostError) -> Duration {
        guard let seconds = value.numberValue, seconds > 0, seconds <= HTTPLibrary.largestTimeout else {
            throw HostError("\(what) must be a number of seconds above 0 and at most \(Int(HTTPLibrary.largestTimeout))")
        }
        return .nanoseconds(Int64(seconds * 1e9))
    }
}
