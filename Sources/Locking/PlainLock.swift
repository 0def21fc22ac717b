#if canImport(Glibc)
import Glibc
#endif

/// A value behind a plain pthread mutex: the project's one lock, in place of the standard
/// library's `Mutex`. On Linux that `Mutex` is a priority-inheritance futex, which hands the
/// lock to a waiter that may not be running yet (swiftlang/swift#88440): under the contention
/// of many scripts answering at once that halved the engine's calls per second. And the
/// hand-over happens in the kernel, where ThreadSanitizer cannot see it, so it reports what
/// the lock guards as races; pthread mutexes it intercepts.
package final class PlainLock<Value>: @unchecked Sendable {
    private let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
    // Only touched with `mutex` held.
    private var value: Value

    package init(_ value: Value) {
        pthread_mutex_init(mutex, nil)
        self.value = value
    }

    deinit {
        pthread_mutex_destroy(mutex)
        mutex.deallocate()
    }

    package func withLock<Result, Failure: Error>(_ body: (inout Value) throws(Failure) -> Result) throws(Failure) -> Result {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return try body(&value)
    }
}
