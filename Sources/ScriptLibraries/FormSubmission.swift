import HotspotNetwork
import LuaSandbox

/// What a browser sends when a person submits a form of `html.forms`: `html.submission`
/// builds it as the options of `cmd:http`, and `cmd:submit` sends it.
///
/// It follows HTML's form submission algorithm: the fields in document order; of the
/// submit buttons only the clicked one (an image button as `name.x` and `name.y`); checked
/// boxes and radios only; disabled controls left out; a GET form's fields replacing the
/// action's query; a POST form's body urlencoded, as multipart/form-data or as text/plain.
struct FormSubmission {
    enum Encoding: String {
        case urlencoded = "application/x-www-form-urlencoded"
        case multipart = "multipart/form-data"
        case plainText = "text/plain"
    }

    /// A pair to send; a file input's is sent as a file without a name or content.
    private struct Entry {
        var name: [UInt8]
        var value: [UInt8]
        var isFile = false
    }

    let request: LuaTable

    /// `problem(argument, message)` is the error for the argument at that index.
    init(form: LuaTable, options: LuaTable, problem: (Int, String) -> HostError) throws(HostError) {
        guard let fieldList = form["fields"].tableValue, let action = form["action"].stringValue else {
            throw problem(0, "a form from html.forms expected (with 'action' and 'fields')")
        }
        let fields = fieldList.array.compactMap(\.tableValue)
        let values = options["values"]
        guard values.isNil || values.tableValue != nil else { throw problem(1, "'values' must be a table") }
        let chosen = values.tableValue ?? LuaTable()
        let clicked = try Self.clickedButton(options["button"], among: fields) { problem(1, $0) }

        var entries: [Entry] = []
        var named = Set<[UInt8]>()
        for (index, field) in fields.enumerated() {
            let type = field["type"].stringValue ?? "text"
            let name = field["name"].bytesValue
            if let name { named.insert(name) }
            guard field["disabled"] != true else { continue }
            if type == "submit" || type == "image" {
                guard index == clicked else { continue }
                if type == "image" {
                    // A click on the image's top-left corner, as when the person uses the keyboard.
                    let prefix = name.map { $0 + Array(".".utf8) } ?? []
                    entries += [Entry(name: prefix + Array("x".utf8), value: Array("0".utf8)),
                                Entry(name: prefix + Array("y".utf8), value: Array("0".utf8))]
                } else if let name {
                    entries.append(Entry(name: name, value: field["value"].bytesValue ?? []))
                }
                continue
            }
            guard let name, !["button", "reset"].contains(type) else { continue }
            let given = chosen[.string(name)]
            let value = field["value"].bytesValue ?? []
            switch type {
            case "checkbox", "radio":
                let checked: Bool
                switch given {
                case .nil: checked = field["checked"] == true
                case .boolean(let on): checked = on && (type == "checkbox" || field["checked"] == true || Self.firstOfGroup(index, fields))
                default: checked = try Self.texts(given, name) { problem(1, $0) }.contains(value)
                }
                if checked { entries.append(Entry(name: name, value: value)) }
            case "select" where given.isNil && field["multiple"] == true:
                for selected in field["selected"].tableValue?.array ?? [] {
                    entries.append(Entry(name: name, value: selected.bytesValue ?? []))
                }
            case "file":
                entries.append(Entry(name: name, value: [], isFile: true))
            default:
                let sent = given.isNil ? [value] : try Self.texts(given, name) { problem(1, $0) }
                // Browsers send a textarea's line breaks as CR LF.
                entries += sent.map { Entry(name: name, value: type == "textarea" ? Self.crlf($0) : $0) }
            }
        }
        // Values no field of the form has come last, by name, as if a page's script added them.
        var extra: [(name: [UInt8], values: [[UInt8]])] = []
        for (key, value) in chosen.entries {
            guard let name = key.bytesValue else { throw problem(1, "'values' maps field names to values") }
            guard !named.contains(name), value != false else { continue }
            extra.append((name, value == true ? [Array("on".utf8)] : try Self.texts(value, name) { problem(1, $0) }))
        }
        for sent in extra.sorted(by: { $0.name.lexicographicallyPrecedes($1.name) }) {
            entries += sent.values.map { Entry(name: sent.name, value: $0) }
        }

        let button = clicked.map { fields[$0] }
        let method = (button?["formmethod"].stringValue ?? form["method"].stringValue) == "post" ? "POST" : "GET"
        let target = button?["formaction"].stringValue ?? action
        let encoding = (button?["formenctype"].stringValue ?? form["enctype"].stringValue).flatMap(Encoding.init(rawValue:))
            ?? .urlencoded
        var request = LuaTable()
        request["method"] = .text(method)
        if method == "GET" {
            // The fields replace the action's query, and the fragment is not sent.
            let base = target.prefix { $0 != "#" }.prefix { $0 != "?" }
            request["url"] = .string(Array(base.utf8) + Array("?".utf8) + Self.urlencoded(entries))
        } else {
            request["url"] = .text(String(target.prefix { $0 != "#" }))
            let (body, contentType) = switch encoding {
            case .urlencoded: (Self.urlencoded(entries), encoding.rawValue)
            case .plainText: (Self.plainText(entries), encoding.rawValue)
            case .multipart: Self.multipart(entries)
            }
            request["body"] = .string(body)
            request["headers"] = ["Content-Type": .text(contentType)]
        }
        self.request = request
    }

    /// The index of the submit button sent: the one `button` names (a field of the form, or
    /// a name, value or label), nil when `button` is false, else the first one enabled, as
    /// when the person presses Enter.
    private static func clickedButton(_ button: LuaValue, among fields: [LuaTable],
                                      problem: (String) -> HostError) throws(HostError) -> Int? {
        let buttons = fields.indices.filter {
            ["submit", "image"].contains(fields[$0]["type"].stringValue) && fields[$0]["disabled"] != true
        }
        switch button {
        case .nil: return buttons.first
        case false: return nil
        case .table(let wanted):
            guard let found = buttons.first(where: { fields[$0] == wanted }) else {
                throw problem("'button' is not an enabled submit button of this form")
            }
            return found
        case .string:
            guard let found = buttons.first(where: { index in
                ["name", "value", "label"].contains { fields[index][.text($0)] == button }
            }) else { throw problem("the form has no enabled submit button named \(button.stringValue ?? "")") }
            return found
        default:
            throw problem("'button' must be a field of the form, a button's name, value or label, or false")
        }
    }

    /// Whether the radio at `index` is its group's first, which `true` checks when none is.
    private static func firstOfGroup(_ index: Int, _ fields: [LuaTable]) -> Bool {
        let group = fields.filter { $0["type"] == "radio" && $0["name"] == fields[index]["name"] && $0["disabled"] != true }
        return !group.contains { $0["checked"] == true } && group.first == fields[index]
    }

    /// A value of `values`: a string, number or boolean, or a list of them.
    private static func texts(_ value: LuaValue, _ name: [UInt8], problem: (String) -> HostError) throws(HostError) -> [[UInt8]] {
        var texts: [[UInt8]] = []
        for element in value.tableValue?.array ?? [value] {
            guard let text = URLLibrary.scalarText(element) else {
                throw problem("'values.\(String(decoding: name, as: UTF8.self))' must be a string, number, boolean or a list of them")
            }
            texts.append(text)
        }
        return texts
    }

    private static func crlf(_ text: [UInt8]) -> [UInt8] {
        var output: [UInt8] = []
        var index = 0
        while index < text.count {
            let byte = text[index]
            if byte == 0x0D || byte == 0x0A {
                output += [0x0D, 0x0A]
                if byte == 0x0D, index + 1 < text.count, text[index + 1] == 0x0A { index += 1 }
            } else {
                output.append(byte)
            }
            index += 1
        }
        return output
    }

    /// HTML's application/x-www-form-urlencoded serializer: a space as `+`, every byte but
    /// letters, digits and `*-._` as `%XX`.
    static func urlencoded(_ pairs: some Sequence<(name: [UInt8], value: [UInt8])>) -> [UInt8] {
        let kept = Set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789*-._".utf8)
        let hex = Array("0123456789ABCDEF".utf8)
        func encode(_ bytes: [UInt8]) -> [UInt8] {
            var output: [UInt8] = []
            for byte in bytes {
                if kept.contains(byte) {
                    output.append(byte)
                } else if byte == 0x20 {
                    output.append(UInt8(ascii: "+"))
                } else {
                    output += [UInt8(ascii: "%"), hex[Int(byte >> 4)], hex[Int(byte & 15)]]
                }
            }
            return output
        }
        return Array(pairs.map { encode($0.name) + [UInt8(ascii: "=")] + encode($0.value) }.joined(separator: [UInt8(ascii: "&")]))
    }

    private static func urlencoded(_ entries: [Entry]) -> [UInt8] {
        urlencoded(entries.lazy.map { (name: $0.name, value: $0.value) })
    }

    private static func plainText(_ entries: [Entry]) -> [UInt8] {
        Array(entries.map { $0.name + [UInt8(ascii: "=")] + $0.value + [0x0D, 0x0A] }.joined())
    }

    /// The body and its content type, with a boundary no value contains.
    private static func multipart(_ entries: [Entry]) -> (body: [UInt8], contentType: String) {
        var generator = SystemRandomNumberGenerator()
        let letters = Array("0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz".utf8)
        var boundary: [UInt8]
        repeat {
            boundary = Array("----hotspot-helper-".utf8) + (0..<24).map { _ in letters.randomElement(using: &generator)! }
        } while entries.contains { contains($0.value, boundary) }
        // Names are escaped as browsers escape them: `"` and line breaks as percent escapes.
        func quoted(_ name: [UInt8]) -> [UInt8] {
            name.flatMap { byte -> [UInt8] in
                switch byte {
                case UInt8(ascii: "\""): Array("%22".utf8)
                case 0x0D: Array("%0D".utf8)
                case 0x0A: Array("%0A".utf8)
                default: [byte]
                }
            }
        }
        var body: [UInt8] = []
        for entry in entries {
            body += Array("--".utf8) + boundary + [0x0D, 0x0A]
            body += Array("Content-Disposition: form-data; name=\"".utf8) + quoted(entry.name) + Array("\"".utf8)
            if entry.isFile {
                body += Array("; filename=\"\"\r\nContent-Type: application/octet-stream".utf8)
            }
            body += Array("\r\n\r\n".utf8) + (entry.isFile ? [] : crlf(entry.value)) + [0x0D, 0x0A]
        }
        body += Array("--".utf8) + boundary + Array("--\r\n".utf8)
        return (body, "multipart/form-data; boundary=" + String(decoding: boundary, as: UTF8.self))
    }

    private static func contains(_ bytes: [UInt8], _ part: [UInt8]) -> Bool {
        guard bytes.count >= part.count else { return false }
        return (0...(bytes.count - part.count)).contains { bytes[$0..<$0 + part.count].elementsEqual(part) }
    }
}
