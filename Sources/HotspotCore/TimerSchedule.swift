/// The state machine's timers: one maintain or retry due per network, one alarm that sleeps
/// until the earliest, and the firings under way. Scheduling a later one (each maintain does)
/// starts no task and wakes nothing; an earlier one wakes the alarm to sleep until it instead.
///
/// It lives inside the machine's actor, which runs the alarm's loop (`nextSleep`, then
/// `takeDue`) and each firing's commands.
struct TimerSchedule {
    struct Due: Equatable {
        let at: Duration
        /// A maintain; otherwise a retry after `temporary_failure`.
        let maintain: Bool
    }

    private var dues = BySSID<Due>()
    private var alarm: Task<Void, Never>?
    private var alarmSleep: (until: Duration, task: Task<Void, Never>)?
    private(set) var isStopped = false
    /// The maintains and retries under way, by a count, until each ends.
    private var firings: [Int: Task<Void, Never>] = [:]
    private var firingCount = 0

    func due(_ ssid: String) -> Due? { dues[ssid] }

    /// When the earliest maintain or retry is due, if any.
    var nextDue: Duration? { dues.allValues.map(\.at).min() }

    /// Sets the network's due time; `startAlarm` makes the alarm's loop when none runs.
    /// Nothing is set once the schedule is stopped.
    mutating func set(_ ssid: String, _ due: Due, startAlarm: () -> Task<Void, Never>) {
        guard !isStopped else { return }
        dues[ssid] = due
        if alarm == nil {
            alarm = startAlarm()
        } else if let sleeping = alarmSleep, due.at < sleeping.until {
            sleeping.task.cancel()  // wakes the alarm to sleep until this one instead
        }
    }

    mutating func clear(_ ssid: String) { dues[ssid] = nil }

    /// A sleep on `clock` until the earliest due time; nil (and the alarm's loop ends) when
    /// none is due or the schedule is stopped.
    mutating func nextSleep(on clock: any HotspotClock) -> Task<Void, Never>? {
        guard !isStopped, let earliest = nextDue else {
            alarm = nil
            alarmSleep = nil
            return nil
        }
        let sleep = Task { _ = try? await clock.sleep(until: earliest) }
        alarmSleep = (earliest, sleep)
        return sleep
    }

    /// The networks whose time has come at `now`, taken off the schedule.
    mutating func takeDue(at now: Duration) -> [(ssid: String, due: Due)] {
        let taken = dues.all.filter { $0.value.at <= now }
        for (ssid, _) in taken { dues[ssid] = nil }
        return taken.map { ($0.ssid, $0.value) }
    }

    /// Keeps a firing's task until `firingEnded` with the number `start` is given.
    mutating func addFiring(_ start: (Int) -> Task<Void, Never>) {
        firingCount += 1
        firings[firingCount] = start(firingCount)
    }

    mutating func firingEnded(_ firing: Int) { firings[firing] = nil }

    /// A firing still under way, taken off the list, to wait for.
    mutating func takeFiring() -> Task<Void, Never>? {
        guard let (firing, task) = firings.first else { return nil }
        firings[firing] = nil
        return task
    }

    /// No due time is set after this, and the alarm ends.
    mutating func stop() {
        isStopped = true
        for ssid in dues.ssids { dues[ssid] = nil }
        alarm?.cancel()
        alarmSleep?.task.cancel()
    }
}
