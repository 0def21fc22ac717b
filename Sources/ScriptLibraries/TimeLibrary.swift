#if canImport(Glibc)
import Glibc
#endif
public import LuaSandbox
import ScriptContract

/// `sleep(seconds)` and `time.now()`. Sleeping counts against the command's deadline: it
/// never sleeps past it, and stops early when the command is cancelled.
public enum TimeLibrary {
    public static let module = HostModule.library(.time, functions: [
        ("now", { _ in
            var now = timespec()
            clock_gettime(CLOCK_REALTIME, &now)
            return [.number(Double(now.tv_sec) + Double(now.tv_nsec) / 1e9)]
        }),
        ("sleep", { call in
            let seconds = try call.number(0)
            guard seconds.isFinite, seconds >= 0 else { throw call.badArgument(0, "a number of seconds, 0 or more") }
            let wake = Deadline.after(.nanoseconds(Int64(min(seconds, 1e9) * 1e9)))
            let end = min(wake, call.deadline ?? wake)
            // Short slices, so a cancelled command stops sleeping quickly.
            while !end.hasPassed, !call.isInterrupted {
                let slice = min(end.remaining, .milliseconds(10))
                var pause = timespec(tv_sec: 0, tv_nsec: Int(slice.nanoseconds))
                nanosleep(&pause, nil)
            }
            return []
        }),
    ])
}
