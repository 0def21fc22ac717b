#if canImport(Glibc)
import Glibc
#endif

/// A value behind a plain pthread mutex, for the engine's hot paths. On Linux the
/// standard library's `Mutex` is a priority-inheritance futex, which hands the lock to a
/// waiter that may not be running yet (swiftlang/swift#88440); under the contention of
/// many scripts answering at once that halved the engine's calls per second.
final class PlainLock<Value>: @unchecked Sendable {
    private let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
    // Only touched with `mutex` held.
    private var value: Value

    init(_ value: Value) {
        pthread_mutex_init(mutex, nil)
        self.value = value
    }

    deinit {
        pthread_mutex_destroy(mutex)
        mutex.deallocate()
    }

    func withLock<Result>(_ body: (inout Value) throws -> Result) rethrows -> Result {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return try body(&value)
    }
}
