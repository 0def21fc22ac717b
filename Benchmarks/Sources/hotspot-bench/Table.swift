/// One measured figure: a line of the results table (more when it has several goals).
struct Figure {
    struct Goal {
        let text: String
        let met: Bool
    }

    let name: String
    let result: String
    /// The same thing measured another way in the same run, when a comparison applies.
    var baseline: (value: String, ratio: String, explanation: String)?
    var goals: [Goal] = []
}

/// The results as a plain-text table, with the baselines explained underneath.
func render(_ figures: [Figure]) -> String {
    var rows = [["Figure", "Result", "Baseline", "Ratio", "Goal", "Verdict"]]
    var notes: [String] = []
    for figure in figures {
        var baseline = "—"
        var ratio = "—"
        if let comparison = figure.baseline {
            // Figures measured the same way share one note.
            if !notes.contains(comparison.explanation) { notes.append(comparison.explanation) }
            baseline = "\(comparison.value) [\(notes.firstIndex(of: comparison.explanation)! + 1)]"
            ratio = comparison.ratio
        }
        let first = figure.goals.first
        rows.append([figure.name, figure.result, baseline, ratio, first?.text ?? "—", verdict(first)])
        for goal in figure.goals.dropFirst() {
            rows.append(["", "", "", "", goal.text, verdict(goal)])
        }
    }
    let widths = rows[0].indices.map { column in rows.map { $0[column].count }.max() ?? 0 }
    func line(_ cells: [String]) -> String {
        zip(cells, widths).map { $0 + String(repeating: " ", count: $1 - $0.count) }
            .joined(separator: "  ").trimmedTrailingSpaces
    }
    var lines = [line(rows[0]), line(widths.map { String(repeating: "-", count: $0) })]
    lines += rows.dropFirst().map(line)
    let goals = figures.flatMap(\.goals)
    lines.append("")
    lines.append("Goals met: \(goals.filter(\.met).count) of \(goals.count)")
    if !notes.isEmpty {
        lines.append("")
        lines += notes.enumerated().map { "[\($0.offset + 1)] \($0.element)" }
    }
    return lines.joined(separator: "\n")
}

private func verdict(_ goal: Figure.Goal?) -> String {
    guard let goal else { return "" }
    return goal.met ? "met" : "missed"
}

private extension String {
    var trimmedTrailingSpaces: String {
        var text = self
        while text.last == " " { text.removeLast() }
        return text
    }
}
