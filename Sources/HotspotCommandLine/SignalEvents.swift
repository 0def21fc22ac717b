#if canImport(Glibc)
import Glibc
#endif
import Dispatch

/// Signals caught instead of ending the process, delivered as a stream so that they are
/// handled between the command's other work (servers stop cleanly, the daemon reloads).
package final class SignalEvents {
    package let received: AsyncStream<Int32>
    private let sources: [any DispatchSourceSignal]

    package init(_ signals: [Int32]) {
        let (received, continuation) = AsyncStream.makeStream(of: Int32.self)
        self.received = received
        let queue = DispatchQueue(label: "signals")
        sources = signals.map { number in
            signal(number, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: number, queue: queue)
            source.setEventHandler { continuation.yield(number) }
            source.resume()
            return source
        }
    }

    deinit { sources.forEach { $0.cancel() } }
}
