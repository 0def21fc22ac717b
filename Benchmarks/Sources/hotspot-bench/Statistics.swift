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
