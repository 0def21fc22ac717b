#if canImport(Glibc)
import Glibc
#endif
import LuaSandbox

/// A set of measurements, sorted once so every percentile is a lookup.
struct Samples {
    let sorted: [Double]

    init(_ values: [Double]) {
        precondition(!values.isEmpty, "a figure needs at least one sample")
        sorted = values.sorted()
    }

    var count: Int { sorted.count }
    var minimum: Double { sorted[0] }
    var maximum: Double { sorted[sorted.count - 1] }
    var median: Double { percentile(50) }
    var p99: Double { percentile(99) }

    /// Linear interpolation between the closest ranks, so small sets still give a
    /// sensible median rather than one of the two middle samples.
    func percentile(_ percent: Double) -> Double {
        let rank = percent / 100 * Double(sorted.count - 1)
        let lower = Int(rank.rounded(.down))
        let upper = min(lower + 1, sorted.count - 1)
        let weight = rank - Double(lower)
        return sorted[lower] * (1 - weight) + sorted[upper] * weight
    }
}

/// Nanoseconds on CLOCK_MONOTONIC between `start` and now.
func nanoseconds(since start: Int64) -> Double {
    Double(Deadline.now.nanoseconds - start)
}

/// CLOCK_MONOTONIC nanoseconds `seconds` from now, for a wait's deadline.
func fromNow(seconds: Int) -> Int64 {
    Deadline.after(.seconds(seconds)).nanoseconds
}

/// How long a run lasts, from the environment variable `name` (`unset` when it is not set);
/// throws when it is not a number of seconds within `bounds`, which `described` puts in words.
func secondsFromEnvironment(_ name: String, unset: Double, within bounds: ClosedRange<Double>, described: String) throws -> Double {
    guard let text = getenv(name).map({ String(cString: $0) }) else { return unset }
    guard let seconds = Double(text), bounds.contains(seconds) else {
        throw BenchError("\(name)=\(text): give a number of seconds, \(described)")
    }
    return seconds
}
