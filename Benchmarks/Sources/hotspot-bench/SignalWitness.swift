#if canImport(Glibc)
import Glibc
#endif
import Dispatch
import DBusClient
import LuaSandbox
import Spawning

/// The bench's witness of NetworkManager on the testbed's bus: a thread of its own with a
/// connection there, through the daemon's own sd-bus code (`SystemBus`), that notes each
/// message in which NetworkManager says the device is ACTIVATED, or that connectivity, the
/// device's or the manager's, is PORTAL. A note's time is when poll returned with the
/// message, before anything was read: the first moment this process could know, on the clock
/// the bench reads the daemon's lines on (CLOCK_MONOTONIC). The daemon, woken by the same
/// delivery, waits for the same wake-up before it can read the message.
final class SignalWitness: @unchecked Sendable {  // its state is the thread's until `stop()` has waited for it
    enum Change { case activated, portal }

    private static let networkManager = "org.freedesktop.NetworkManager"
    private static let managerPath = "/org/freedesktop/NetworkManager"
    private static let device = "org.freedesktop.NetworkManager.Device"
    /// NMDeviceState and NMConnectivityState.
    private static let activated: UInt64 = 100
    private static let portal: UInt64 = 2

    private var notes: [(change: Change, at: Int64)] = []
    private var failure: String?
    private let wakeUp: (readEnd: Int32, writeEnd: Int32)
    private let finished = DispatchSemaphore(value: 0)
    private var stopped = false

    /// Listens once this returns; throws when it cannot.
    init(busAddress: String, interface: String) throws {
        guard let pipe = closeOnExecPipe() else { throw BenchError("cannot make a pipe: \(String(cString: strerror(errno)))") }
        wakeUp = pipe
        let listening = DispatchSemaphore(value: 0)
        DispatchQueue(label: "bench.signal-witness").async {
            self.follow(busAddress: busAddress, interface: interface, listening: listening)
            self.finished.signal()
        }
        listening.wait()
        if let failure {
            _ = stop()
            throw BenchError("the signal witness cannot listen: \(failure)")
        }
    }

    /// Stops listening (once) and returns every note, in the order they came.
    func stop() -> [(change: Change, at: Int64)] {
        if !stopped {
            stopped = true
            var byte: UInt8 = 1
            _ = write(wakeUp.writeEnd, &byte, 1)
            finished.wait()
            close(wakeUp.readEnd)
            close(wakeUp.writeEnd)
        }
        return notes
    }

    private func follow(busAddress: String, interface: String, listening: DispatchSemaphore) {
        let bus: SystemBus
        var arrived: Int64 = 0
        do {
            bus = try SystemBus(address: busAddress)
            let device = try bus.call(Self.networkManager, Self.managerPath, Self.networkManager, "GetDeviceByIpIface",
                                      [.string(interface)]).first?.reference
            try bus.addMatch("type='signal',sender='\(Self.networkManager)'") { [unowned self] message in
                if let change = Self.change(in: message, device: device) { notes.append((change, arrived)) }
            }
        } catch {
            failure = "\(error)"
            listening.signal()
            return
        }
        listening.signal()
        while (try? bus.dispatchPending()) != nil, let request = try? bus.waitRequest() {
            var descriptors = [request.descriptor, pollfd(fd: wakeUp.readEnd, events: Int16(POLLIN), revents: 0)]
            guard poll(&descriptors, 2, request.timeoutMilliseconds) >= 0 || errno == EINTR else { return }
            arrived = Deadline.now.nanoseconds
            if descriptors[1].revents != 0 { return }
        }
    }

    /// What a signal of NetworkManager's says that the figures time, if anything.
    private static func change(in message: BusMessage, device: String?) -> Change? {
        guard let values = try? message.values() else { return nil }
        let properties: [String: BusValue]
        switch (message.interface, message.member) {
        case ("org.freedesktop.DBus.Properties", "PropertiesChanged"):
            guard values.count == 3, let changed = values[1].stringKeyed else { return nil }
            properties = changed
            if message.path == managerPath, values[0].string == networkManager {
                return properties["Connectivity"]?.unsigned == portal ? .portal : nil
            }
            guard message.path == device, values[0].string == Self.device else { return nil }
        case (Self.device, "StateChanged"):
            guard message.path == device, let state = values.first else { return nil }
            properties = ["State": state]
        default:
            return nil
        }
        if properties["State"]?.unsigned == activated { return .activated }
        return properties["Ip4Connectivity"]?.unsigned == portal ? .portal : nil
    }
}
