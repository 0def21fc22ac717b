import HotspotControl
import Locking
import Synchronization

/// Follows the daemon's events over one `watch` connection and hands each to every open
/// page; connects again (after 1 s, doubling up to 10 s) when the daemon goes away. Each
/// page also gets `{"event":"daemon","connected":...}` when the connection comes or goes.
final class EventRelay: Sendable {
    private let controlSocket: String
    private let subscribers = PlainLock<[Int: AsyncStream<[UInt8]>.Continuation]>([:])
    private let nextSubscriber = Atomic<Int>(0)
    private let following = PlainLock<Task<Void, Never>?>(nil)

    init(controlSocket: String) { self.controlSocket = controlSocket }

    func start() {
        let task = Task { [controlSocket] in
            var delay = Duration.seconds(1)
            while !Task.isCancelled {
                if let watch = try? ControlClient.Watch(path: controlSocket) {
                    delay = .seconds(1)
                    deliver(Array(#"{"event":"daemon","connected":true}"#.utf8))
                    await withTaskCancellationHandler {
                        for await line in watch.lines { deliver(line) }
                    } onCancel: {
                        watch.stop()
                    }
                    deliver(Array(#"{"event":"daemon","connected":false}"#.utf8))
                }
                try? await Task.sleep(for: delay)
                delay = min(delay * 2, .seconds(10))
            }
        }
        following.withLock { $0 = task }
    }

    func stop() {
        following.withLock { $0 }?.cancel()
        // Finished outside the lock: finishing runs `onTermination`, which takes it.
        let ending = subscribers.withLock { subscribers in
            defer { subscribers = [:] }
            return Array(subscribers.values)
        }
        ending.forEach { $0.finish() }
    }

    /// The events from now on, and an empty line every `keepAlive`, until the stream is
    /// dropped. A page that does not keep up loses the oldest (it fetches the whole status
    /// again on each event anyway).
    func subscribe(keepAlive: Duration) -> AsyncStream<[UInt8]> {
        let id = nextSubscriber.add(1, ordering: .relaxed).newValue
        let (stream, continuation) = AsyncStream.makeStream(of: [UInt8].self, bufferingPolicy: .bufferingNewest(256))
        let ticking = Task {
            while !Task.isCancelled {
                try? await Task.sleep(for: keepAlive)
                continuation.yield([])
            }
        }
        continuation.onTermination = { [weak self] _ in
            ticking.cancel()
            _ = self?.subscribers.withLock { $0.removeValue(forKey: id) }
        }
        subscribers.withLock { $0[id] = continuation }
        return stream
    }

    private func deliver(_ line: [UInt8]) {
        for continuation in subscribers.withLock({ Array($0.values) }) { continuation.yield(line) }
    }
}
