import Foundation
import Locking
import Synchronization
import Testing
import TestSupport
@testable import DBusClient

/// sd-bus through `SystemBus`, on a dbus-daemon of the test's own: values of every type go out
/// and come back as they were, and errors arrive with their D-Bus names.
@Suite("The system bus through sd-bus", .enabled(if: PrivateBus.unavailableReason == nil, "\(PrivateBus.unavailableReason ?? "")"))
struct SystemBusTests {
    /// A connection of its own, on a thread of its own, that answers every call to /echo with
    /// the values it was sent, under the name `test.Echo`.
    final class EchoService: Sendable {
        private let stopped = Atomic(false)
        private let done = DispatchSemaphore(value: 0)

        init(bus address: String) throws {
            let ready = DispatchSemaphore(value: 0)
            let failure = PlainLock<String?>(nil)
            Thread { [self] in
                defer { done.signal() }
                do {
                    let bus = try SystemBus(address: address)
                    try bus.addObject(at: "/echo") { [unowned bus] call in
                        guard call.member == "Echo", let values = try? call.values() else { return false }
                        try? bus.reply(to: call, values)
                        return true
                    }
                    _ = try bus.call("org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus", "RequestName",
                                     [.string("test.Echo"), .uint32(0)])
                    ready.signal()
                    while !stopped.load(ordering: .relaxed) {
                        try bus.dispatchPending()
                        var descriptors = [try bus.waitRequest().descriptor]
                        _ = poll(&descriptors, 1, 20)
                    }
                } catch {
                    failure.withLock { $0 = "\(error)" }
                    ready.signal()
                }
            }.start()
            ready.wait()
            if let problem = failure.withLock({ $0 }) { throw CocoaError(.featureUnsupported, userInfo: [NSLocalizedDescriptionKey: problem]) }
        }

        func stop() {
            stopped.store(true, ordering: .relaxed)
            done.wait()
        }
    }

    @Test func valuesOfEveryTypeComeBackAsTheyWent() throws {
        let bus = try PrivateBus()
        let echo = try EchoService(bus: bus.address)
        defer { echo.stop() }
        let client = try SystemBus(address: bus.address)
        let values: [BusValue] = [
            .byte(0xff), .boolean(true), .int16(-2), .uint16(3), .int32(-4), .uint32(5), .int64(-6), .uint64(7), .double(1.5),
            .string("Café"), .objectPath("/org/example/1"), .signature("a{sv}"),
            .array(elementSignature: "y", [0x43, 0x00, 0xff].map(BusValue.byte)),
            .array(elementSignature: "s", []),
            .dictionary([("802-11-wireless-security", .dictionary([("psk", .variant(.string("hunter22")))], valueSignature: "v"))],
                        valueSignature: "a{sv}"),
            .structure([.string("field"), .uint32(1), .array(elementSignature: "o", [.objectPath("/")])]),
            .variant(.variant(.array(elementSignature: "a{sv}", []))),
        ]
        #expect(try client.call("test.Echo", "/echo", "test.Echo", "Echo", values) == values)
    }

    @Test func errorsArriveWithTheirNames() throws {
        let bus = try PrivateBus()
        let echo = try EchoService(bus: bus.address)
        defer { echo.stop() }
        let client = try SystemBus(address: bus.address)
        #expect { try client.call("test.Echo", "/echo", "test.Echo", "Shout") } throws: { error in
            (error as? BusError)?.name == "org.freedesktop.DBus.Error.UnknownMethod"
        }
        #expect { try client.call("test.Nobody", "/", "test.Nobody", "Hello") } throws: { error in
            (error as? BusError)?.name == "org.freedesktop.DBus.Error.ServiceUnknown"
        }
        #expect { try client.call("test.Echo", "/echo", "test.Echo", "Echo", [.unixFD]) } throws: { error in
            (error as? BusError)?.description == "descriptors are not sent"
        }
    }

    @Test func noBusIsAClearError() throws {
        let nowhere = "unix:path=\(scratchPath("no-bus"))/bus.sock"
        #expect { try SystemBus(address: nowhere) } throws: { error in
            "\(error)" == "cannot connect to \(nowhere): No such file or directory"
        }
    }
}
