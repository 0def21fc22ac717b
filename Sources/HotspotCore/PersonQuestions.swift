/// What a helper asks of a person when it answers `ui_required` (docs/SCRIPTING.md, "Asking
/// the person"): shown by `hotspot-helper ui` and `status`; `present_ui` gets the answers in
/// `cmd.answers`, checked against the questions before the handler runs.
public struct PersonQuestions: Sendable, Hashable, Codable {
    public var title: String
    /// A sentence or two above the fields.
    public var message: String?
    public var fields: [Field]

    public struct Field: Sendable, Hashable, Codable {
        public enum Kind: String, Sendable, Codable, CaseIterable {
            /// `password` is typed hidden; `checkbox` is answered yes or no; `choice` picks
            /// one of `options`.
            case text, email, number, password, checkbox, choice
        }

        /// The key in `cmd.answers`.
        public var name: String
        public var label: String
        public var kind: Kind
        /// A required checkbox must be checked, as in HTML (accepting terms, say).
        public var required: Bool
        /// For `choice`: what the person picks from.
        public var options: [Option]
        /// A regular expression the whole answer must match (as HTML's `pattern`).
        public var pattern: String?

        public init(name: String, label: String, kind: Kind = .text, required: Bool = true, options: [Option] = [],
                    pattern: String? = nil) {
            self.name = name
            self.label = label
            self.kind = kind
            self.required = required
            self.options = options
            self.pattern = pattern
        }
    }

    public struct Option: Sendable, Hashable, Codable {
        /// What `cmd.answers` holds when it is picked.
        public var value: String
        public var label: String

        public init(value: String, label: String) {
            self.value = value
            self.label = label
        }
    }

    /// The most a declaration may hold, so a script cannot flood a page or a terminal.
    public static let maximumFields = 20
    public static let maximumOptions = 50
    public static let maximumTextLength = 200
    public static let maximumMessageLength = 1000

    public init(title: String, message: String? = nil, fields: [Field]) {
        self.title = title
        self.message = message
        self.fields = fields
    }

    /// The words a checkbox's answer may be given in, and what they mean.
    static let checkboxWords: [String: Bool] = [
        "true": true, "yes": true, "on": true, "1": true, "false": false, "no": false, "off": false, "0": false,
    ]

    /// What is wrong with `answers`, one sentence a person can act on per problem; empty when
    /// nothing is.
    public func problems(with answers: [String: String]) -> [String] {
        var problems: [String] = []
        let names = Set(fields.map(\.name))
        for name in answers.keys.sorted() where !names.contains(name) {
            problems.append("nothing is asked as \"\(name)\"; the questions are \(fields.map(\.name).joined(separator: ", "))")
        }
        for field in fields {
            let answer = answers[field.name]?.trimmingWhitespace() ?? ""
            if answer.isEmpty {
                if field.required { problems.append("\(field.label) (\(field.name)) is required") }
                continue
            }
            if let problem = field.problem(with: answer) { problems.append("\(field.label) (\(field.name)) \(problem)") }
        }
        return problems
    }

    /// The answers as the helper gets them: trimmed, a checkbox as "true" or "false" (an
    /// unanswered one is "false"), an unanswered optional field absent. Only for answers
    /// `problems(with:)` found nothing wrong with.
    public func normalized(_ answers: [String: String]) -> [String: String] {
        var normalized: [String: String] = [:]
        for field in fields {
            let answer = answers[field.name]?.trimmingWhitespace() ?? ""
            if field.kind == .checkbox {
                normalized[field.name] = String(Self.checkboxWords[answer.lowercased()] ?? false)
            } else if !answer.isEmpty {
                normalized[field.name] = answer
            }
        }
        return normalized
    }
}

extension PersonQuestions.Field {
    /// What is wrong with a non-empty answer, to follow the field's label ("must be a
    /// number"); nil when nothing.
    public func problem(with answer: String) -> String? {
        switch kind {
        case .email:
            let parts = answer.split(separator: "@", omittingEmptySubsequences: false)
            guard parts.count == 2, !parts[0].isEmpty, parts[1].contains("."), !answer.contains(" ") else {
                return "must be an email address, such as name@example.org"
            }
        case .number:
            guard Double(answer) != nil else { return "must be a number" }
        case .checkbox:
            guard let checked = PersonQuestions.checkboxWords[answer.lowercased()] else { return "must be yes or no" }
            if required, !checked { return "must be checked" }
        case .choice:
            guard options.contains(where: { $0.value == answer }) else {
                return "must be one of \(options.map(\.value).joined(separator: ", "))"
            }
        case .text, .password:
            break
        }
        if let pattern, let expression = try? Regex(pattern), (try? expression.wholeMatch(in: answer)) == nil {
            return "is not in the expected form"
        }
        return nil
    }
}
