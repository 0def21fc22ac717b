#if canImport(Glibc)
import Glibc
#endif
import Dispatch
import Locking
import Synchronization
import LinuxFiles
import DBusClient

/// Notifications on the desktop of the person the process runs as, through the freedesktop
/// notification service (`org.freedesktop.Notifications`) on their session bus: shown with
/// one action, withdrawn, and the action heard when they click it.
///
/// sd-bus is not thread-safe, so the connection lives on a thread of its own that polls it
/// and a wake-up pipe: requests are queued for that thread, signals are dispatched there.
public final class DesktopNotifier: Sendable {
    static let service = "org.freedesktop.Notifications"
    static let path = "/org/freedesktop/Notifications"

    /// What the caller's side and the bus's thread share.
    private final class Shared: Sendable {
        /// Run on the bus's thread; given nil once the connection is gone.
        let requests = PlainLock<[@Sendable (SystemBus?) -> Void]>([])
        let wakeUp = WakeUpPipe()
        let stopped = Atomic<Bool>(false)
        let connected = Atomic<Bool>(false)

        func takeRequests() -> [@Sendable (SystemBus?) -> Void] { requests.withLock { queued in defer { queued = [] }; return queued } }
    }

    private let shared = Shared()

    /// Connects to the session bus; nil when there is none to connect to (no desktop).
    /// `onAction` gets the notification's id and the action's key, on the bus's thread.
    public init?(onAction: @escaping @Sendable (_ id: UInt32, _ action: String) -> Void) {
        guard Self.sessionBusMayExist else { return nil }
        let connected = DispatchSemaphore(value: 0)
        DispatchQueue(label: "desktop-notifier").async { [shared] in
            defer {
                shared.stopped.store(true, ordering: .relaxed)
                for request in shared.takeRequests() { request(nil) }
            }
            guard let bus = try? SystemBus(session: true) else {
                connected.signal()
                return
            }
            let rule = "type='signal',interface='\(Self.service)',member='ActionInvoked'"
            try? bus.addMatch(rule) { message in
                guard let values = try? message.values(), values.count == 2,
                      case .uint32(let id) = values[0], case .string(let action) = values[1] else { return }
                onAction(id, action)
            }
            shared.connected.store(true, ordering: .relaxed)
            connected.signal()
            while !shared.stopped.load(ordering: .relaxed) {
                guard let (descriptor, timeout) = try? bus.waitRequest() else { break }
                var polled = [descriptor, pollfd(fd: shared.wakeUp.readEnd, events: Int16(POLLIN), revents: 0)]
                _ = poll(&polled, 2, timeout)
                if polled[1].revents != 0 {
                    shared.wakeUp.drain()
                    for request in shared.takeRequests() { request(bus) }
                }
                guard (try? bus.dispatchPending()) != nil else { break }
            }
        }
        connected.wait()
        guard shared.connected.load(ordering: .relaxed) else { return nil }
    }

    deinit { stop() }

    /// Whether there is a session bus to try, where sd-bus looks for one: the address in
    /// DBUS_SESSION_BUS_ADDRESS, else the socket $XDG_RUNTIME_DIR/bus. Without either (a
    /// device with no desktop) libsystemd is not even opened.
    static var sessionBusMayExist: Bool {
        if let address = getenv("DBUS_SESSION_BUS_ADDRESS"), address.pointee != 0 { return true }
        guard let runtimeDirectory = getenv("XDG_RUNTIME_DIR"), runtimeDirectory.pointee != 0 else { return false }
        var status = stat()
        return stat(String(cString: runtimeDirectory) + "/bus", &status) == 0 && status.st_mode & S_IFMT == S_IFSOCK
    }

    public func stop() {
        shared.stopped.store(true, ordering: .relaxed)
        shared.wakeUp.wake()
    }

    /// Shows a notification with one action (its key and label); its id, nil when the
    /// service refused it or there is none.
    public func show(summary: String, body: String, action: (key: String, label: String)) async -> UInt32? {
        await perform { bus in
            guard let bus else { return nil }
            let reply = try? bus.call(Self.service, Self.path, Self.service, "Notify", [
                .string("hotspot-helper"), .uint32(0), .string("network-wireless"), .string(summary), .string(body),
                .array(elementSignature: "s", [.string(action.key), .string(action.label)]),
                .array(elementSignature: "{sv}", []), .int32(-1),
            ])
            if case .uint32(let id)? = reply?.first { return id }
            return nil
        }
    }

    /// Takes a notification off the desktop.
    public func withdraw(_ id: UInt32) async {
        _ = await perform { bus -> Void? in
            _ = try? bus?.call(Self.service, Self.path, Self.service, "CloseNotification", [.uint32(id)])
            return nil
        }
    }

    /// Runs `request` on the bus's thread (with nil once the connection is gone) and returns
    /// what it returned.
    private func perform<Value: Sendable>(_ request: @escaping @Sendable (SystemBus?) -> Value?) async -> Value? {
        guard !shared.stopped.load(ordering: .relaxed) else { return nil }
        return await withCheckedContinuation { continuation in
            shared.requests.withLock { $0.append { bus in continuation.resume(returning: request(bus)) } }
            shared.wakeUp.wake()
            // The thread may have ended meanwhile: whoever takes a request runs it, once.
            if shared.stopped.load(ordering: .relaxed) {
                for pending in shared.takeRequests() { pending(nil) }
            }
        }
    }
}
