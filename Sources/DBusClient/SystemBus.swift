#if canImport(Glibc)
public import Glibc
#endif
import CSystemd

/// Why something on the bus failed: the D-Bus error's name and message, or a local failure.
public struct BusError: Error, CustomStringConvertible {
    /// The D-Bus error name (`org.freedesktop.DBus.Error.ServiceUnknown`); nil for a local failure.
    public let name: String?
    public let message: String

    public var description: String { name.map { "\(message) (\($0))" } ?? message }

    package init(name: String?, message: String) {
        self.name = name
        var message = message[...]
        while message.last?.isWhitespace == true { message.removeLast() }  // some services end theirs with a newline
        self.message = String(message)
    }

    /// From sd-bus's negative errno result.
    package init(_ what: String, code: Int32) {
        self.init(name: nil, message: "\(what): \(String(cString: strerror(-code)))")
    }
}

/// A message the bus hands to a handler; valid only while the handler runs.
public struct BusMessage {
    package let pointer: OpaquePointer

    public var member: String? { hh_sd_bus_message_get_member(pointer).map { String(cString: $0) } }
    public var interface: String? { hh_sd_bus_message_get_interface(pointer).map { String(cString: $0) } }
    public var path: String? { hh_sd_bus_message_get_path(pointer).map { String(cString: $0) } }
    /// The unique name (`:1.42`) of the connection that sent it.
    package var sender: String? { hh_sd_bus_message_get_sender(pointer).map { String(cString: $0) } }

    /// Every value of the message's body, read from its start.
    public func values() throws(BusError) -> [BusValue] {
        let rewound = hh_sd_bus_message_rewind(pointer, 1)
        guard rewound >= 0 else { throw BusError("cannot read a message", code: rewound) }
        var values: [BusValue] = []
        while let value = try Self.read(pointer) { values.append(value) }
        return values
    }

    /// The next value at the message's read position; nil at the end of the enclosing container.
    private static func read(_ message: OpaquePointer) throws(BusError) -> BusValue? {
        var type: CChar = 0
        var contentsPointer: UnsafePointer<CChar>?
        let peeked = hh_sd_bus_message_peek_type(message, &type, &contentsPointer)
        guard peeked >= 0 else { throw BusError("cannot read a message", code: peeked) }
        guard peeked > 0 else { return nil }
        let contents = contentsPointer.map { String(cString: $0) } ?? ""
        func basic<Value: BitwiseCopyable>(_ initial: Value) throws(BusError) -> Value {
            var value = initial
            let result = hh_sd_bus_message_read_basic(message, type, &value)
            guard result > 0 else { throw BusError("cannot read a value", code: result < 0 ? result : -EBADMSG) }
            return value
        }
        func container(_ read: () throws(BusError) -> BusValue) throws(BusError) -> BusValue {
            let entered = hh_sd_bus_message_enter_container(message, type, contents)
            guard entered > 0 else { throw BusError("cannot read a container", code: entered < 0 ? entered : -EBADMSG) }
            let value = try read()
            let exited = hh_sd_bus_message_exit_container(message)
            guard exited >= 0 else { throw BusError("cannot read a container", code: exited) }
            return value
        }
        func all() throws(BusError) -> [BusValue] {
            var values: [BusValue] = []
            while let value = try Self.read(message) { values.append(value) }
            return values
        }
        switch UInt8(bitPattern: type) {
        case UInt8(ascii: "y"): return .byte(try basic(UInt8(0)))
        case UInt8(ascii: "b"): return .boolean(try basic(Int32(0)) != 0)  // sd-bus reads a boolean into an int
        case UInt8(ascii: "n"): return .int16(try basic(Int16(0)))
        case UInt8(ascii: "q"): return .uint16(try basic(UInt16(0)))
        case UInt8(ascii: "i"): return .int32(try basic(Int32(0)))
        case UInt8(ascii: "u"): return .uint32(try basic(UInt32(0)))
        case UInt8(ascii: "x"): return .int64(try basic(Int64(0)))
        case UInt8(ascii: "t"): return .uint64(try basic(UInt64(0)))
        case UInt8(ascii: "d"): return .double(try basic(Double(0)))
        case UInt8(ascii: "h"):
            _ = try basic(Int32(-1))
            return .unixFD
        case UInt8(ascii: "s"), UInt8(ascii: "o"), UInt8(ascii: "g"):
            let text = try basic(UnsafePointer<CChar>?.none).map { String(cString: $0) } ?? ""
            return type == CChar(UInt8(ascii: "s")) ? .string(text) : type == CChar(UInt8(ascii: "o")) ? .objectPath(text) : .signature(text)
        case UInt8(ascii: "a") where contents == "y":
            // Bytes (an SSID) in one piece rather than one read each.
            var start: UnsafeRawPointer?
            var size = 0
            let result = hh_sd_bus_message_read_array(message, CChar(UInt8(ascii: "y")), &start, &size)
            guard result >= 0 else { throw BusError("cannot read an array of bytes", code: result) }
            let bytes = start.map { Array(UnsafeRawBufferPointer(start: $0, count: size)) } ?? []
            return .array(elementSignature: "y", bytes.map(BusValue.byte))
        case UInt8(ascii: "a"): return try container { () throws(BusError) in .array(elementSignature: contents, try all()) }
        case UInt8(ascii: "r"): return try container { () throws(BusError) in .structure(try all()) }
        case UInt8(ascii: "v"):
            return try container { () throws(BusError) in
                guard let inner = try read(message) else { throw BusError(name: nil, message: "an empty variant") }
                return .variant(inner)
            }
        case UInt8(ascii: "e"):
            return try container { () throws(BusError) in
                let entry = try all()
                guard entry.count == 2 else { throw BusError(name: nil, message: "a dictionary entry of \(entry.count) values") }
                return .dictionaryEntry(key: entry[0], value: entry[1])
            }
        default:
            throw BusError(name: nil, message: "a value of unknown type \(UnicodeScalar(UInt8(bitPattern: type)))")
        }
    }
}

/// A method call kept past its handler, to be answered once what it waits for happened
/// (`SystemBus.reply`, `replyError` with `message`); released when dropped.
package final class KeptCall {
    package let message: BusMessage

    package init(_ call: BusMessage) {
        message = BusMessage(pointer: hh_sd_bus_message_ref(call.pointer))
    }

    deinit { hh_sd_bus_message_unref(message.pointer) }
}

/// One connection to the D-Bus system bus through libsystemd's sd-bus (DBUS_SYSTEM_BUS_ADDRESS,
/// else the standard socket). sd-bus is not thread-safe, and its calls to Swift (the
/// handlers) come from `dispatchPending`: a connection is made, used and closed on one
/// thread, the one that polls it. Public for the bench, whose witness of NetworkManager's
/// signals listens on the testbed's bus as the daemon does.
public final class SystemBus {
    private let bus: OpaquePointer
    /// The handlers sd-bus holds by pointer; released once the connection is closed.
    private var handlers: [Unmanaged<Handler>] = []

    private final class Handler {
        let handle: (BusMessage) -> Bool
        init(_ handle: @escaping (BusMessage) -> Bool) { self.handle = handle }
    }

    /// Connects to the bus at `address` (`unix:path=...`), or to the system bus, or with
    /// `session` to the session bus of the user the process runs as (DBUS_SESSION_BUS_ADDRESS,
    /// else the user's standard socket).
    public init(address: String? = nil, session: Bool = false) throws(BusError) {
        if let failure = hh_systemd_load() {
            throw BusError(name: nil, message: "cannot use libsystemd for D-Bus: \(String(cString: failure))")
        }
        var bus: OpaquePointer?
        var result: Int32
        if session {
            result = hh_sd_bus_open_user(&bus)
        } else if let address {
            result = hh_sd_bus_new(&bus)
            if result >= 0 { result = hh_sd_bus_set_address(bus, address) }
            if result >= 0 { result = hh_sd_bus_set_bus_client(bus, 1) }
            if result >= 0 { result = hh_sd_bus_start(bus) }
            if result < 0 { hh_sd_bus_unref(bus) }
        } else {
            result = hh_sd_bus_open_system(&bus)
        }
        guard result >= 0, let bus else {
            throw BusError("cannot connect to \(session ? "the session bus" : address ?? "the system bus")", code: result)
        }
        self.bus = bus
    }

    deinit {
        // Without flushing: a bus that went away must not hold the thread. Its slots (the
        // matches and objects) are freed with it, before the handlers they point to.
        hh_sd_bus_close_unref(bus)
        handlers.forEach { $0.release() }
    }

    /// Calls a method and returns the values of its reply.
    public func call(_ destination: String, _ path: String, _ interface: String, _ member: String, _ arguments: [BusValue] = [],
                     timeout: Duration = .seconds(10)) throws(BusError) -> [BusValue] {
        var call: OpaquePointer?
        let made = hh_sd_bus_message_new_method_call(bus, &call, destination, path, interface, member)
        guard made >= 0, let call else { throw BusError("cannot call \(interface).\(member)", code: made) }
        defer { hh_sd_bus_message_unref(call) }
        for argument in arguments { try Self.append(argument, to: call) }
        var error = sd_bus_error()
        var reply: OpaquePointer?
        defer {
            hh_sd_bus_error_free(&error)
            hh_sd_bus_message_unref(reply)
        }
        let result = hh_sd_bus_call(bus, call, UInt64(timeout / .microseconds(1)), &error, &reply)
        guard result >= 0, let reply else {
            if let name = error.name {
                throw BusError(name: String(cString: name), message: error.message.map { String(cString: $0) } ?? "")
            }
            throw BusError("\(interface).\(member) failed", code: result)
        }
        return try BusMessage(pointer: reply).values()
    }

    /// Calls `handle` with every message matching `rule` (D-Bus match rule syntax).
    public func addMatch(_ rule: String, _ handle: @escaping (BusMessage) -> Void) throws(BusError) {
        // Returning false lets other matches see the message too.
        let handler = retain { handle($0); return false }
        let result = hh_sd_bus_add_match(bus, nil, rule, Self.trampoline, handler.toOpaque())
        guard result >= 0 else { throw BusError("cannot watch \(rule)", code: result) }
    }

    /// Answers the method calls to `path`: `handle` replies (`reply`, `replyError`), or keeps
    /// the call to reply later (`KeptCall`), and returns true, or returns false for sd-bus to
    /// answer that the method is unknown.
    package func addObject(at path: String, _ handle: @escaping (BusMessage) -> Bool) throws(BusError) {
        let handler = retain(handle)
        let result = hh_sd_bus_add_object(bus, nil, path, Self.trampoline, handler.toOpaque())
        guard result >= 0 else { throw BusError("cannot serve \(path)", code: result) }
    }

    package func reply(to call: BusMessage, _ values: [BusValue]) throws(BusError) {
        var reply: OpaquePointer?
        let made = hh_sd_bus_message_new_method_return(call.pointer, &reply)
        guard made >= 0, let reply else { throw BusError("cannot reply", code: made) }
        defer { hh_sd_bus_message_unref(reply) }
        for value in values { try Self.append(value, to: reply) }
        let sent = hh_sd_bus_send(bus, reply, nil)
        guard sent >= 0 else { throw BusError("cannot reply", code: sent) }
    }

    package func replyError(to call: BusMessage, name: String, message: String) {
        name.withCString { name in
            message.withCString { message in
                var error = sd_bus_error(name: name, message: message, _need_free: 0)
                _ = hh_sd_bus_reply_method_error(call.pointer, &error)
            }
        }
    }

    /// Runs the handlers of every message that has arrived, until none is left; throws once
    /// the connection is lost.
    public func dispatchPending() throws(BusError) {
        while true {
            let result = hh_sd_bus_process(bus, nil)
            guard result >= 0 else { throw BusError("the connection to the system bus ended", code: result) }
            if result == 0 { return }
        }
    }

    /// What to wait for before `dispatchPending` has work: the connection's descriptor and
    /// events, and sd-bus's next timeout in milliseconds (-1: none).
    public func waitRequest() throws(BusError) -> (descriptor: pollfd, timeoutMilliseconds: Int32) {
        let descriptor = hh_sd_bus_get_fd(bus)
        let events = hh_sd_bus_get_events(bus)
        guard descriptor >= 0, events >= 0 else { throw BusError("the connection to the system bus ended", code: min(descriptor, events)) }
        var until: UInt64 = 0
        var timeout: Int32 = -1
        if hh_sd_bus_get_timeout(bus, &until) >= 0, until != UInt64.max {
            var now = timespec()
            clock_gettime(CLOCK_MONOTONIC, &now)
            let nowMicroseconds = UInt64(now.tv_sec) * 1_000_000 + UInt64(now.tv_nsec) / 1000
            timeout = until <= nowMicroseconds ? 0 : Int32(clamping: (until - nowMicroseconds + 999) / 1000)
        }
        return (pollfd(fd: descriptor, events: Int16(events), revents: 0), timeout)
    }

    private func retain(_ handle: @escaping (BusMessage) -> Bool) -> Unmanaged<Handler> {
        let handler = Unmanaged.passRetained(Handler(handle))
        handlers.append(handler)
        return handler
    }

    private static let trampoline: sd_bus_message_handler_t = { message, handler, _ in
        guard let message, let handler else { return 0 }
        return Unmanaged<Handler>.fromOpaque(handler).takeUnretainedValue().handle(BusMessage(pointer: message)) ? 1 : 0
    }

    private static func append(_ value: BusValue, to message: OpaquePointer) throws(BusError) {
        func basic<Value: BitwiseCopyable>(_ type: String, _ value: Value) -> Int32 {
            var value = value
            return hh_sd_bus_message_append_basic(message, CChar(type.utf8.first!), &value)
        }
        func container(_ type: String, _ contents: String, _ body: () throws(BusError) -> Void) throws(BusError) {
            let opened = hh_sd_bus_message_open_container(message, CChar(type.utf8.first!), contents)
            guard opened >= 0 else { throw BusError("cannot write \(value.signature)", code: opened) }
            try body()
            let closed = hh_sd_bus_message_close_container(message)
            guard closed >= 0 else { throw BusError("cannot write \(value.signature)", code: closed) }
        }
        let result: Int32
        switch value {
        case .byte(let byte): result = basic("y", byte)
        case .boolean(let flag): result = basic("b", Int32(flag ? 1 : 0))
        case .int16(let number): result = basic("n", number)
        case .uint16(let number): result = basic("q", number)
        case .int32(let number): result = basic("i", number)
        case .uint32(let number): result = basic("u", number)
        case .int64(let number): result = basic("x", number)
        case .uint64(let number): result = basic("t", number)
        case .double(let number): result = basic("d", number)
        case .string(let text), .objectPath(let text), .signature(let text):
            // A string is passed as itself, not through a pointer to it.
            result = text.withCString { hh_sd_bus_message_append_basic(message, CChar(value.signature.utf8.first!), $0) }
        case .unixFD:
            throw BusError(name: nil, message: "descriptors are not sent")
        case .array(let element, let elements):
            try container("a", element) { () throws(BusError) in for element in elements { try append(element, to: message) } }
            return
        case .variant(let inner):
            try container("v", inner.signature) { () throws(BusError) in try append(inner, to: message) }
            return
        case .structure(let fields):
            try container("r", fields.map(\.signature).joined()) { () throws(BusError) in for field in fields { try append(field, to: message) } }
            return
        case .dictionaryEntry(let key, let entryValue):
            try container("e", key.signature + entryValue.signature) { () throws(BusError) in
                try append(key, to: message)
                try append(entryValue, to: message)
            }
            return
        }
        guard result >= 0 else { throw BusError("cannot write \(value.signature)", code: result) }
    }
}
