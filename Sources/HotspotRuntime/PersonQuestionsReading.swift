public import HotspotCore
import LuaSandbox

/// A script's questions as Lua gives them (docs/SCRIPTING.md, "Asking the person"): the
/// script's `ui` table, or the table `ui_required` is returned with.
///
///     { title = "City Library", message = "...",
///       fields = { { name = "email", label = "Email address", kind = "email" } } }
///
/// `kind` is text unless given, `required` true unless given false, and `options` (for a
/// choice) a list of values, or of `{ value =, label = }` tables.
extension PersonQuestions {
    /// What is wrong with a script's questions: the first problem, naming the field.
    public struct ReadingProblem: Error, Sendable, Equatable, CustomStringConvertible {
        public let description: String
    }

    init(lua value: LuaValue, named name: String) throws(ReadingProblem) {
        func problem(_ message: String) -> ReadingProblem { ReadingProblem(description: message) }
        func text(_ value: LuaValue, _ path: String, limit: Int, required: Bool = true) throws(ReadingProblem) -> String? {
            guard let text = value.stringValue else {
                if value.isNil, !required { return nil }
                throw problem("`\(path)` must be a string")
            }
            guard !text.isEmpty || !required else { throw problem("`\(path)` must not be empty") }
            guard text.count <= limit else { throw problem("`\(path)` has \(text.count) characters; use at most \(limit)") }
            return text
        }
        guard let table = value.tableValue else { throw problem("`\(name)` must be a table of title, message and fields") }
        let title = try text(table["title"], "\(name).title", limit: Self.maximumTextLength)!
        let message = try text(table["message"], "\(name).message", limit: Self.maximumMessageLength, required: false)
        guard let list = table["fields"].tableValue?.array, !list.isEmpty else {
            throw problem("`\(name).fields` must be a list of at least one field")
        }
        guard list.count <= Self.maximumFields else {
            throw problem("`\(name).fields` has \(list.count) fields; use at most \(Self.maximumFields)")
        }
        var fields: [Field] = []
        for (index, entry) in list.enumerated() {
            let path = "\(name).fields[\(index + 1)]"
            guard let field = entry.tableValue else { throw problem("`\(path)` must be a table with name and label") }
            let fieldName = try text(field["name"], "\(path).name", limit: Self.maximumTextLength)!
            guard !fields.contains(where: { $0.name == fieldName }) else { throw problem("`\(path).name` \"\(fieldName)\" is asked twice") }
            let label = try text(field["label"], "\(path).label", limit: Self.maximumTextLength)!
            let kindName = try text(field["kind"], "\(path).kind", limit: Self.maximumTextLength, required: false) ?? Field.Kind.text.rawValue
            guard let kind = Field.Kind(rawValue: kindName) else {
                throw problem("`\(path).kind` must be one of \(Field.Kind.allCases.map(\.rawValue).joined(separator: ", ")), not \"\(kindName)\"")
            }
            let required: Bool
            switch field["required"] {
            case .nil: required = true
            case .boolean(let value): required = value
            default: throw problem("`\(path).required` must be true or false")
            }
            var options: [Option] = []
            for (number, option) in (field["options"].tableValue?.array ?? []).enumerated() {
                let optionPath = "\(path).options[\(number + 1)]"
                if let value = option.stringValue {
                    options.append(Option(value: try text(option, optionPath, limit: Self.maximumTextLength)!, label: value))
                } else {
                    let entry = option.tableValue ?? LuaTable()
                    let value = try text(entry["value"], "\(optionPath).value", limit: Self.maximumTextLength)!
                    options.append(Option(value: value, label: try text(entry["label"], "\(optionPath).label", limit: Self.maximumTextLength)!))
                }
            }
            guard options.count <= Self.maximumOptions else {
                throw problem("`\(path).options` has \(options.count) options; use at most \(Self.maximumOptions)")
            }
            if kind == .choice, options.isEmpty { throw problem("`\(path)` is a choice: give its `options`") }
            if kind != .choice, !options.isEmpty { throw problem("`\(path).options` are for a choice only") }
            let pattern = try text(field["pattern"], "\(path).pattern", limit: Self.maximumTextLength, required: false)
            if let pattern, (try? Regex(pattern)) == nil {
                throw problem("`\(path).pattern` is not a regular expression: \(pattern)")
            }
            fields.append(Field(name: fieldName, label: label, kind: kind, required: required, options: options, pattern: pattern))
        }
        self.init(title: title, message: message, fields: fields)
    }
}
