internal import CLuaSandbox

/// A point on CLOCK_MONOTONIC, the clock shared by the supervisor, its workers and the
/// hook inside each Lua state.
public struct Deadline: Sendable, Hashable, Comparable {
    public let nanoseconds: Int64

    public init(nanoseconds: Int64) { self.nanoseconds = nanoseconds }

    public static var now: Deadline { Deadline(nanoseconds: sbx_monotonic_ns()) }

    public static func after(_ duration: Duration) -> Deadline {
        let (seconds, attoseconds) = duration.components
        let delta = seconds.multipliedReportingOverflow(by: 1_000_000_000)
        guard !delta.overflow else { return Deadline(nanoseconds: .max) }
        let total = delta.partialValue.addingReportingOverflow(attoseconds / 1_000_000_000)
        let at = sbx_monotonic_ns().addingReportingOverflow(total.partialValue)
        return Deadline(nanoseconds: total.overflow || at.overflow ? .max : at.partialValue)
    }

    /// Time left, never negative.
    public var remaining: Duration {
        .nanoseconds(max(0, nanoseconds - sbx_monotonic_ns()))
    }

    public var hasPassed: Bool { sbx_monotonic_ns() >= nanoseconds }

    public static func < (lhs: Deadline, rhs: Deadline) -> Bool { lhs.nanoseconds < rhs.nanoseconds }
}

/// How long a call may run.
public enum CallDeadline: Sendable, Hashable {
    /// The engine's configured default.
    case `default`
    case after(Duration)
    /// No deadline (for example a command that waits on a person).
    case unlimited
}

/// A duration in whole nanoseconds (short ones: the kill grace, the scheduler's slices).
func nanoseconds(_ duration: Duration) -> Int64 {
    let (seconds, attoseconds) = duration.components
    return seconds * 1_000_000_000 + attoseconds / 1_000_000_000
}
