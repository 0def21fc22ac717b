import LuaSandbox

/// Commands that succeeded and failed over `elapsed` nanoseconds.
struct Tally {
    var succeeded = 0
    var failed = 0
    var elapsed = 0.0

    static func += (total: inout Tally, more: Tally) {
        total.succeeded += more.succeeded
        total.failed += more.failed
        total.elapsed += more.elapsed
    }
}

/// `callers` tasks running `body` back to back until `duration` has passed.
func eachUntil(_ duration: Duration, callers: Int, _ body: @escaping @Sendable (Int) async -> Bool)
    async -> Tally
{
    let start = Deadline.now.nanoseconds
    let end = Deadline.after(duration).nanoseconds
    let (succeeded, failed) = await withTaskGroup(of: (Int, Int).self) { group in
        for caller in 0..<callers {
            group.addTask {
                var succeeded = 0
                var failed = 0
                while Deadline.now.nanoseconds < end {
                    if await body(caller) { succeeded += 1 } else { failed += 1 }
                }
                return (succeeded, failed)
            }
        }
        return await group.reduce(into: (0, 0)) { total, counts in
            total.0 += counts.0
            total.1 += counts.1
        }
    }
    return Tally(succeeded: succeeded, failed: failed, elapsed: nanoseconds(since: start))
}
