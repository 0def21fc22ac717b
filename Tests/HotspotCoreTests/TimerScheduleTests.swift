import Testing
import TestSupport
@testable import HotspotCore

/// The machine's timers alone, on a clock that moves only when the test says.
@Suite struct TimerScheduleTests {
    @Test func oneAlarmSleepsUntilTheEarliestAndTakesOnlyWhatIsDue() async {
        let clock = TestClock()
        var schedule = TimerSchedule()
        var alarms = 0
        let startAlarm = { alarms += 1; return Task<Void, Never> {} }
        schedule.set("Cafe", .init(at: .seconds(300), maintain: true), startAlarm: startAlarm)
        schedule.set("Hotel", .init(at: .seconds(100), maintain: false), startAlarm: startAlarm)
        #expect(alarms == 1)
        #expect(schedule.nextDue == .seconds(100))

        let sleep = schedule.nextSleep(on: clock)
        await clock.waitForSleeper()
        clock.advance(by: .seconds(100))
        await sleep?.value
        let due = schedule.takeDue(at: clock.now)
        #expect(due.map(\.ssid) == ["Hotel"])
        #expect(due.first?.due == .init(at: .seconds(100), maintain: false))
        #expect(schedule.due("Hotel") == nil)
        #expect(schedule.nextDue == .seconds(300))
    }

    @Test func anEarlierDueWakesTheAlarmBeforeTheClockMoves() async {
        let clock = TestClock()
        var schedule = TimerSchedule()
        schedule.set("Cafe", .init(at: .seconds(300), maintain: true)) { Task {} }
        let sleep = schedule.nextSleep(on: clock)
        await clock.waitForSleeper()
        schedule.set("Hotel", .init(at: .seconds(5), maintain: false)) { Task {} }
        await sleep?.value  // ends with the clock still at zero
        #expect(clock.now == .zero)
        #expect(schedule.takeDue(at: clock.now).isEmpty)
        #expect(schedule.nextDue == .seconds(5))
    }

    @Test func theNFCAndNFDFormsOfOneNameAreTwoNetworks() {
        var schedule = TimerSchedule()
        let (composed, decomposed) = ("Caf\u{E9}", "Cafe\u{301}")
        schedule.set(composed, .init(at: .seconds(1), maintain: true)) { Task {} }
        schedule.set(decomposed, .init(at: .seconds(2), maintain: false)) { Task {} }
        schedule.clear(composed)
        #expect(schedule.due(decomposed) == .init(at: .seconds(2), maintain: false))
        #expect(schedule.takeDue(at: .seconds(2)).map { Array($0.ssid.utf8) } == [Array(decomposed.utf8)])
    }

    @Test func nothingIsScheduledOnceStoppedAndTheAlarmEnds() {
        let clock = TestClock()
        var schedule = TimerSchedule()
        schedule.set("Cafe", .init(at: .seconds(1), maintain: true)) { Task {} }
        schedule.stop()
        schedule.set("Hotel", .init(at: .seconds(1), maintain: true)) { Task {} }
        #expect(schedule.isStopped)
        #expect(schedule.nextDue == nil)
        #expect(schedule.nextSleep(on: clock) == nil)
    }

    @Test func firingsAreKeptUntilTheyEnd() async {
        var schedule = TimerSchedule()
        var numbers: [Int] = []
        schedule.addFiring { numbers.append($0); return Task {} }
        schedule.addFiring { numbers.append($0); return Task {} }
        #expect(numbers == [1, 2])
        schedule.firingEnded(1)
        let waiting = schedule.takeFiring()
        #expect(waiting != nil)
        await waiting?.value
        #expect(schedule.takeFiring() == nil)
    }
}
