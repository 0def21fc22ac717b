internal import CLuaSandbox

/// A point on CLOCK_MONOTONIC, the clock shared by the supervisor, its workers and the
/// hook inside each Lua state.
public struct Deadline: Sendable, Hashable, Comparable {
    public let nanoseconds: Int64

    public init(nanoseconds: Int64) { self.nanoseconds = nanoseconds }

    public static var now: Deadline { Deadline(nanoseconds: sbx_monotonic_ns()) }

    public static func after(_ duration: Duration) -> Deadline {
        let at = sbx_monotonic_ns().addingReportingOverflow(duration.nanoseconds)
        return Deadline(nanoseconds: at.overflow ? .max : at.partialValue)
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

extension Duration {
    /// In whole nanoseconds, the unit of `Deadline` and of the worker's clocks: the package's one
    /// conversion. It saturates at Int64's bounds (292 years) instead of trapping, so that a
    /// deadline of "practically never" stays one.
    package var nanoseconds: Int64 {
        let (seconds, attoseconds) = components
        let whole = seconds.multipliedReportingOverflow(by: 1_000_000_000)
        let total = whole.partialValue.addingReportingOverflow(attoseconds / 1_000_000_000)
        guard !whole.overflow, !total.overflow else { return seconds < 0 ? .min : .max }
        return total.partialValue
    }
}
