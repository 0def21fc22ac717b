import ArgumentParser
import HotspotNetwork

/// A number of seconds given on the command line, within the range its option allows: an
/// infinite, huge or tiny value would overflow a deadline or run a timer in a loop, and a
/// negative one is a typo. Options of this type also take values that start with a dash
/// (`parsing: .unconditional`), so `-5` is refused as negative, not as a missing value.
// Decodable only because ArgumentParser asks it of every option's type.
package struct Seconds: Sendable, Comparable, Decodable, CustomStringConvertible {
    package let value: Double

    package init(_ value: Double) { self.value = value }

    package var duration: Duration { .seconds(value) }
    package var description: String { value.plainDescription }

    package static func < (lhs: Seconds, rhs: Seconds) -> Bool { lhs.value < rhs.value }

    package static let day = 86_400.0

    /// The parser of an option in `range`; `offAtZero` when 0 switches the option's work off.
    package static func within(_ range: ClosedRange<Double>, offAtZero: Bool = false) -> @Sendable (String) throws -> Seconds {
        { text in
            guard let value = Double(text), value.isFinite else {
                throw ValidationError("'\(text)' is not a number of seconds")
            }
            if value < 0 { throw ValidationError("\(text) is negative; give a number of seconds from \(bounds(range, offAtZero))") }
            if value == 0, offAtZero { return Seconds(0) }
            guard range.contains(value) else {
                throw ValidationError("\(text) is out of range; give a number of seconds from \(bounds(range, offAtZero))")
            }
            return Seconds(value)
        }
    }

    private static func bounds(_ range: ClosedRange<Double>, _ offAtZero: Bool) -> String {
        let upper = range.upperBound.truncatingRemainder(dividingBy: day) == 0
            ? "\(range.upperBound.plainDescription) (\((range.upperBound / day).plainDescription) day\(range.upperBound == day ? "" : "s"))"
            : range.upperBound.plainDescription
        return "\(range.lowerBound.plainDescription) to \(upper)" + (offAtZero ? ", or 0 for none" : "")
    }
}
