/// The forms of a recorded page, read as far as the import needs: each field's name, kind
/// and value, to tell what the page handed out (hidden fields, tokens) from what the person
/// typed. A tolerant tag scanner, not a parser: the generated script and the scripts under
/// test read pages with the runtime's real one (`html.forms`, libxml2).
public struct PageForm: Sendable, Equatable {
    public struct Field: Sendable, Equatable {
        public let name: String
        /// `hidden`, `text`, `email`, `password`, `checkbox`, `radio`, `submit`, `select`,
        /// `textarea`, `button`..., lower case.
        public let kind: String
        public let value: String
        public var isButton: Bool { kind == "submit" || kind == "button" || kind == "image" }
    }

    /// As written (relative or absolute; empty for the page itself).
    public let action: String
    /// `get` or `post`.
    public let method: String
    public let fields: [Field]

    public func field(_ name: String) -> Field? { fields.first { $0.name == name } }

    /// The forms of `html`, in document order, leaving out what is inside comments, scripts,
    /// styles and textareas.
    public static func forms(in html: String) -> [PageForm] {
        var forms: [PageForm] = []
        var current: (action: String, method: String, fields: [Field])?
        var textarea: (name: String, start: String.Index)?
        var index = html.startIndex
        while let open = html[index...].firstIndex(of: "<") {
            let rest = html[open...]
            if rest.hasPrefix("<!--") {
                index = rest.firstRange(of: "-->")?.upperBound ?? html.endIndex
                continue
            }
            guard let close = tagEnd(in: html, from: open) else { break }
            let tag = html[html.index(after: open)..<close]
            index = html.index(after: close)
            let name = tag.prefix { !$0.isWhitespace && $0 != "/" && $0 != ">" }.lowercased()
            if let pending = textarea {
                guard name == "/textarea" else { continue }
                current?.fields.append(Field(name: pending.name, kind: "textarea", value: String(html[pending.start..<open])))
                textarea = nil
                continue
            }
            let attributes = Self.attributes(tag.dropFirst(name.count))
            switch name {
            case "script", "style":
                index = html[index...].firstRange(of: "</\(name)")?.lowerBound ?? html.endIndex
            case "form":
                if let form = current { forms.append(PageForm(action: form.action, method: form.method, fields: form.fields)) }
                current = (attributes["action"] ?? "", (attributes["method"] ?? "get").lowercased() == "post" ? "post" : "get", [])
            case "/form":
                if let form = current { forms.append(PageForm(action: form.action, method: form.method, fields: form.fields)) }
                current = nil
            case "input":
                guard let fieldName = attributes["name"], !fieldName.isEmpty, attributes["disabled"] == nil else { continue }
                let kind = (attributes["type"] ?? "text").lowercased()
                current?.fields.append(Field(name: fieldName, kind: kind, value: attributes["value"] ?? (kind == "checkbox" || kind == "radio" ? "on" : "")))
            case "button":
                guard let fieldName = attributes["name"], !fieldName.isEmpty else { continue }
                let kind = (attributes["type"] ?? "submit").lowercased()
                current?.fields.append(Field(name: fieldName, kind: kind, value: attributes["value"] ?? ""))
            case "select":
                guard let fieldName = attributes["name"], !fieldName.isEmpty else { continue }
                current?.fields.append(Field(name: fieldName, kind: "select", value: ""))
            case "textarea":
                guard let fieldName = attributes["name"], !fieldName.isEmpty else { continue }
                textarea = (fieldName, index)
            default:
                continue
            }
        }
        if let form = current { forms.append(PageForm(action: form.action, method: form.method, fields: form.fields)) }
        return forms
    }

    /// The `>` that ends the tag opened at `open`, outside quoted attribute values.
    private static func tagEnd(in html: String, from open: String.Index) -> String.Index? {
        var quote: Character?
        var index = html.index(after: open)
        while index < html.endIndex {
            let character = html[index]
            if let open = quote {
                if character == open { quote = nil }
            } else if character == "\"" || character == "'" {
                quote = character
            } else if character == ">" {
                return index
            }
            index = html.index(after: index)
        }
        return nil
    }

    /// A tag's attributes, names in lower case, values with their character references decoded.
    static func attributes(_ text: Substring) -> [String: String] {
        var attributes: [String: String] = [:]
        var rest = text[...]
        while true {
            rest = rest.drop { $0.isWhitespace || $0 == "/" }
            guard !rest.isEmpty else { return attributes }
            let name = rest.prefix { !$0.isWhitespace && $0 != "=" && $0 != "/" }
            rest = rest.dropFirst(name.count).drop(while: \.isWhitespace)
            var value = ""
            if rest.first == "=" {
                rest = rest.dropFirst().drop(while: \.isWhitespace)
                if let quote = rest.first, quote == "\"" || quote == "'" {
                    let inner = rest.dropFirst()
                    let end = inner.firstIndex(of: quote) ?? inner.endIndex
                    value = String(inner[..<end])
                    rest = end < inner.endIndex ? inner[inner.index(after: end)...] : inner[end...]
                } else {
                    let raw = rest.prefix { !$0.isWhitespace }
                    value = String(raw)
                    rest = rest.dropFirst(raw.count)
                }
            }
            let key = name.lowercased()
            if attributes[key] == nil { attributes[key] = decodeReferences(value) }
        }
    }

    static func decodeReferences(_ text: String) -> String {
        guard text.contains("&") else { return text }
        return text.replacing("&quot;", with: "\"").replacing("&#39;", with: "'").replacing("&#x27;", with: "'")
            .replacing("&lt;", with: "<").replacing("&gt;", with: ">").replacing("&amp;", with: "&")
    }
}

