/// Number formatting by hand, without Foundation's locale-dependent formatters.

/// `value` with exactly `decimals` digits after the point.
func fixed(_ value: Double, decimals: Int) -> String {
    var scale = 1.0
    for _ in 0..<decimals { scale *= 10 }
    let scaled = Int64((abs(value) * scale).rounded())
    let sign = value < 0 && scaled != 0 ? "-" : ""
    let whole = scaled / Int64(scale)
    guard decimals > 0 else { return sign + String(whole) }
    let fraction = String(scaled % Int64(scale))
    return sign + String(whole) + "." + String(repeating: "0", count: decimals - fraction.count) + fraction
}

/// About three significant digits: 1.23, 12.3, 123.
func significant(_ value: Double) -> String {
    let magnitude = abs(value)
    return fixed(value, decimals: magnitude >= 100 ? 0 : magnitude >= 10 ? 1 : 2)
}

/// A duration in the unit that keeps it readable.
func duration(nanoseconds value: Double) -> String {
    let magnitude = abs(value)
    if magnitude >= 1e9 { return significant(value / 1e9) + " s" }
    if magnitude >= 1e6 { return significant(value / 1e6) + " ms" }
    if magnitude >= 1e3 { return significant(value / 1e3) + " µs" }
    return significant(value) + " ns"
}

func mebibytes(_ bytes: Int) -> String { fixed(Double(bytes) / Double(1 << 20), decimals: 1) + " MiB" }

/// A change in size, signed, in whole KiB: +132 KiB, -8 KiB.
func signedKibibytes(_ bytes: Int) -> String { (bytes < 0 ? "" : "+") + grouped(bytes / 1024) + " KiB" }

/// An integer with thousands separators: 25,312.
func grouped(_ value: Int) -> String {
    let digits = Array(String(abs(value)))
    var text = ""
    for (index, digit) in digits.enumerated() {
        if index > 0, (digits.count - index) % 3 == 0 { text.append(",") }
        text.append(digit)
    }
    return (value < 0 ? "-" : "") + text
}

/// How many times `measured` is `baseline`: 612×, 1.35×.
func ratio(_ measured: Double, over baseline: Double) -> String {
    guard baseline > 0 else { return "—" }
    return significant(measured / baseline) + "×"
}
