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
        // Scanned as bytes (what it looks for is ASCII, so every index found is a character's):
        // a recording's pages are megabytes, and walking them by characters took seconds.
        while let open = html.utf8[index...].firstIndex(of: UInt8(ascii: "<")) {
            let rest = html[open...]
            if rest.utf8.starts(with: "<!--".utf8) {
                index = find("-->", in: html, from: open)?.upperBound ?? html.endIndex
                continue
            }
            guard let close = tagEnd(in: html, from: open) else { break }
            let tag = html[html.index(after: open)..<close]
            index = html.index(after: close)
            let name = tagName(tag)
            if let pending = textarea {
                guard name == "/textarea" else { continue }
                current?.fields.append(Field(name: pending.name, kind: "textarea", value: String(html[pending.start..<open])))
                textarea = nil
                continue
            }
            // Only the tags read below have their attributes read: most of a page is others.
            guard ["script", "style", "form", "/form", "input", "button", "select", "textarea"].contains(name) else { continue }
            let attributes = Self.attributes(tag.dropFirst(name.count))
            switch name {
            case "script", "style":
                index = find("</\(name)", in: html, from: index)?.lowerBound ?? html.endIndex
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
        var quote: UInt8?
        let bytes = html.utf8
        var index = bytes.index(after: open)
        while index < bytes.endIndex {
            let byte = bytes[index]
            if let open = quote {
                if byte == open { quote = nil }
            } else if byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "'") {
                quote = byte
            } else if byte == UInt8(ascii: ">") {
                return index
            }
            index = bytes.index(after: index)
        }
        return nil
    }

    /// The tag's name, lower case: up to white space, `/` or `>`. Read as bytes while they
    /// are ASCII (every tag of a page is named, and most are not a form's).
    private static func tagName(_ tag: Substring) -> String {
        let ascii = tag.utf8.prefix { $0 < 0x80 && $0 != UInt8(ascii: "/") && $0 != UInt8(ascii: ">") && !(9...13).contains($0) && $0 != 32 }
        guard ascii.endIndex < tag.utf8.endIndex, tag.utf8[ascii.endIndex] >= 0x80 else { return String(Substring(ascii)).lowercased() }
        return tag.prefix { !$0.isWhitespace && $0 != "/" && $0 != ">" }.lowercased()
    }

    /// Where `needle` (ASCII) first is in `html` from `start`, compared byte by byte.
    private static func find(_ needle: String, in html: String, from start: String.Index) -> Range<String.Index>? {
        let bytes = html.utf8, pattern = Array(needle.utf8)
        var index = start
        while let first = bytes[index...].firstIndex(of: pattern[0]) {
            if bytes[first...].starts(with: pattern) { return first..<bytes.index(first, offsetBy: pattern.count) }
            index = bytes.index(after: first)
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

