internal import CLibXML2
import HotspotNetwork
public import LuaSandbox
import ScriptContract

/// `html.forms(page, base_url)`, `html.submission(form [, options])`, `html.links(page, base_url)`,
/// `html.text(page)` and `html.meta_refresh(page [, base_url])`.
///
/// Pages are read by libxml2's tolerant HTML parser, as a browser would recover them,
/// never matched with patterns. Every function is linear in the size of the page.
public enum HTMLLibrary {
    static let maximumPageSize = 4 << 20
    static let maximumForms = 64
    static let maximumFieldsPerForm = 256

    public static let module = HostModule.library(.html, functions: [
        ("forms", { (call: borrowing HostCall) throws -> [LuaValue] in
            let page = try document(call)
            return [.table(LuaTable(array: forms(in: page, baseURL: try call.string(1))))]
        }),
        ("submission", { (call: borrowing HostCall) throws -> [LuaValue] in
            let options = call[1].isNil ? LuaTable() : try call.table(1)
            return [.table(try FormSubmission(form: try call.table(0), options: options) { call.badArgument($0, $1) }.request)]
        }),
        ("links", { (call: borrowing HostCall) throws -> [LuaValue] in
            let page = try document(call)
            return [.table(LuaTable(array: links(in: page, baseURL: try call.string(1))))]
        }),
        ("text", { (call: borrowing HostCall) throws -> [LuaValue] in
            [.string(visibleText(of: try document(call)))]
        }),
        ("meta_refresh", { (call: borrowing HostCall) throws -> [LuaValue] in
            let page = try document(call)
            return [metaRefresh(in: page, baseURL: call[1].isNil ? nil : try call.string(1))]
        }),
    ])

    private static func document(_ call: borrowing HostCall) throws -> HTMLDocument {
        let page = try call.bytes(0)
        guard page.count <= maximumPageSize else {
            throw HostError("\(call.functionName): the page is larger than \(maximumPageSize >> 20) MiB")
        }
        return try HTMLDocument(parsing: page, for: call.functionName)
    }

    // MARK: Forms

    private static func forms(in document: borrowing HTMLDocument, baseURL: String) -> [LuaValue] {
        guard let root = document.root else { return [] }
        var forms: [MarkupNode] = []
        var controls: [(element: MarkupNode, kind: String, form: Int?, disabled: Bool)] = []
        var openForm: MarkupNode?
        var baseHref: [UInt8]?
        // Fieldsets with `disabled` the walk is inside: every control in them is disabled.
        var disabledFieldsets: [MarkupNode] = []
        walk(root, enter: { node in
            switch elementName(node) {
            case "form"? where openForm == nil:
                // Browsers ignore a form inside a form, so its fields belong to the outer one.
                openForm = node
                forms.append(node)
            case let kind? where ["input", "select", "textarea", "button"].contains(kind):
                let disabled = !disabledFieldsets.isEmpty || attribute(node, "disabled") != nil
                controls.append((node, kind, openForm == nil ? nil : forms.count - 1, disabled))
            case "fieldset"? where attribute(node, "disabled") != nil:
                disabledFieldsets.append(node)
            case "base"? where baseHref == nil:
                baseHref = attribute(node, "href")
            default:
                break
            }
            return true
        }, leave: { node in
            if node == openForm { openForm = nil }
            if node == disabledFieldsets.last { disabledFieldsets.removeLast() }
        })

        forms = Array(forms.prefix(maximumForms))
        var formsByID: [[UInt8]: Int] = [:]
        for (index, form) in forms.enumerated() {
            if let id = attribute(form, "id"), formsByID[id] == nil { formsByID[id] = index }
        }
        var fields = [[LuaValue]](repeating: [], count: forms.count)
        for control in controls {
            // A `form` attribute names the owner, wherever the control is (an unknown id: none).
            let owner = attribute(control.element, "form").map { formsByID[$0] } ?? control.form
            guard let owner, owner < forms.count, fields[owner].count < maximumFieldsPerForm,
                  var field = field(control.element, kind: control.kind) else { continue }
            if control.disabled { field["disabled"] = true }
            // What the button changes of its form's submission when it is the one clicked.
            if ["submit", "image"].contains(field["type"].stringValue) {
                if let action = attribute(control.element, "formaction").map(urlText), !action.isEmpty {
                    field["formaction"] = .text(documentBase(baseURL, href: baseHref).resolving(URLReference(action)).text)
                }
                field["formmethod"] = attribute(control.element, "formmethod").map(formMethod) ?? nil
                field["formenctype"] = attribute(control.element, "formenctype").flatMap(encodingType) ?? nil
            }
            fields[owner].append(.table(field))
        }
        fields = fields.map(checkingOneRadioPerGroup)

        let base = documentBase(baseURL, href: baseHref)
        return zip(forms, fields).map { form, fields in
            var table = LuaTable()
            let action = urlText(attribute(form, "action") ?? [])
            table["action"] = .text(action.isEmpty ? baseURL : base.resolving(URLReference(action)).text)
            table["method"] = attribute(form, "method").map(formMethod) ?? "get"
            table["enctype"] = attribute(form, "enctype").flatMap(encodingType) ?? nil
            table["id"] = attribute(form, "id").map(LuaValue.string) ?? nil
            table["name"] = attribute(form, "name").map(LuaValue.string) ?? nil
            table["fields"] = .table(LuaTable(array: fields))
            return .table(table)
        }
    }

    private static func formMethod(_ attribute: [UInt8]) -> LuaValue {
        asciiLowercased(attribute) == Array("post".utf8) ? "post" : "get"
    }

    /// A form's `enctype` other than the default urlencoded one, which is left out.
    private static func encodingType(_ attribute: [UInt8]) -> LuaValue? {
        let type = String(decoding: asciiLowercased(attribute), as: UTF8.self)
        return FormSubmission.Encoding(rawValue: type).flatMap { $0 == .urlencoded ? nil : .text(type) }
    }

    /// In a group of radio buttons (one name) only one is checked: of several marked
    /// `checked`, a browser keeps the last.
    private static func checkingOneRadioPerGroup(_ fields: [LuaValue]) -> [LuaValue] {
        var lastChecked: [LuaValue: Int] = [:]
        for (index, field) in fields.enumerated() {
            guard let table = field.tableValue, table["type"].stringValue == "radio", table["checked"] == true,
                  !table["name"].isNil else { continue }
            lastChecked[table["name"]] = index
        }
        return fields.enumerated().map { index, field in
            guard var table = field.tableValue, let last = lastChecked[table["name"]], last != index,
                  table["type"].stringValue == "radio", table["checked"] == true else { return field }
            table["checked"] = false
            return .table(table)
        }
    }

    /// `{ name, type, value, checked }`, and a button's `label`; a `<select multiple>` has
    /// `selected`, every value it sends.
    private static func field(_ element: MarkupNode, kind: String) -> LuaTable? {
        var field = LuaTable()
        field["name"] = attribute(element, "name").map(LuaValue.string) ?? nil
        switch kind {
        case "input":
            let type = fieldType(element, default: "text")
            field["type"] = .text(type)
            if type == "checkbox" || type == "radio" {
                // What browsers send for a checked box without a value.
                field["value"] = .string(attribute(element, "value") ?? Array("on".utf8))
                field["checked"] = .boolean(attribute(element, "checked") != nil)
            } else {
                field["value"] = .string(attribute(element, "value") ?? [])
            }
        case "select":
            field["type"] = "select"
            if attribute(element, "multiple") != nil {
                let values = selectedValues(element)
                field["multiple"] = true
                field["value"] = .string(values.first ?? [])
                field["selected"] = .table(LuaTable(array: values.map(LuaValue.string)))
            } else {
                field["value"] = .string(selectedValue(element))
            }
        case "textarea":
            field["type"] = "textarea"
            // Browsers drop the line break (LF, CR LF or CR) that follows `<textarea>`.
            var value = ownText(element)
            if value.first == 0x0D { value.removeFirst() }
            if value.first == 0x0A { value.removeFirst() }
            field["value"] = .string(value)
        default:
            field["type"] = .text(fieldType(element, default: "submit"))
            field["value"] = .string(attribute(element, "value") ?? [])
            field["label"] = .string(allText(of: element))
        }
        return field
    }

    private static func fieldType(_ element: MarkupNode, default defaultType: String) -> String {
        let type = asciiLowercased(attribute(element, "type") ?? [])
        return type.isEmpty ? defaultType : String(decoding: type, as: UTF8.self)
    }

    /// The value of the first option marked selected, else of the first option, else "".
    private static func selectedValue(_ select: MarkupNode) -> [UInt8] {
        let options = options(of: select)
        guard let option = options.first(where: { attribute($0, "selected") != nil }) ?? options.first else { return [] }
        return optionValue(option)
    }

    /// A `<select multiple>` sends every option marked selected, and nothing without one.
    private static func selectedValues(_ select: MarkupNode) -> [[UInt8]] {
        options(of: select).filter { attribute($0, "selected") != nil }.map(optionValue)
    }

    /// The select's children and its optgroups' children that are options.
    private static func options(of select: MarkupNode) -> [MarkupNode] {
        children(select)
            .flatMap { elementName($0) == "optgroup" ? Array(children($0)) : [$0] }
            .filter { elementName($0) == "option" }
    }

    private static func optionValue(_ option: MarkupNode) -> [UInt8] {
        if let value = attribute(option, "value") { return value }
        var label = CollapsedText()
        label.append(ownText(option))
        return label.bytes
    }

    // MARK: Links

    static let maximumLinks = 256

    /// `{ url, text }` of each `<a href>` that leads to another page (not a fragment of this
    /// one, nor `javascript:`), in document order.
    private static func links(in document: borrowing HTMLDocument, baseURL: String) -> [LuaValue] {
        guard let root = document.root else { return [] }
        var anchors: [(href: String, node: MarkupNode)] = []
        var baseHref: [UInt8]?
        walk(root, enter: { node in
            switch elementName(node) {
            case "a"? where anchors.count < maximumLinks:
                let href = urlText(attribute(node, "href") ?? [])
                if !href.isEmpty, !href.hasPrefix("#"), !href.lowercased().hasPrefix("javascript:") { anchors.append((href, node)) }
            case "base"? where baseHref == nil:
                baseHref = attribute(node, "href")
            default:
                break
            }
            return true
        })
        let base = documentBase(baseURL, href: baseHref)
        return anchors.map { anchor in
            ["url": .text(base.resolving(URLReference(anchor.href)).text), "text": .string(allText(of: anchor.node))]
        }
    }

    // MARK: Text

    /// Elements whose text a reader does not see.
    private static let hiddenElements: Set = ["head", "title", "script", "style", "template"]
    /// Elements that run on within a line; every other element separates words.
    private static let inlineElements: Set = [
        "a", "abbr", "b", "bdi", "bdo", "cite", "code", "data", "dfn", "em", "font", "i", "kbd", "label", "mark",
        "q", "s", "samp", "small", "span", "strike", "strong", "sub", "sup", "time", "tt", "u", "var",
    ]

    private static func visibleText(of document: borrowing HTMLDocument) -> [UInt8] {
        guard let root = document.root else { return [] }
        var collected = CollapsedText()
        walk(root, enter: { node in
            if let content = text(node) { collected.append(content) }
            guard let name = elementName(node) else { return false }
            if !inlineElements.contains(name) { collected.breakWords() }
            return !hiddenElements.contains(name)
        }, leave: { node in
            if let name = elementName(node), !inlineElements.contains(name) { collected.breakWords() }
        })
        return collected.bytes
    }

    // MARK: Meta refresh

    /// `{ delay, url }` from the first valid `<meta http-equiv="refresh">`, or nil.
    private static func metaRefresh(in document: borrowing HTMLDocument, baseURL: String?) -> LuaValue {
        guard let root = document.root else { return nil }
        var refresh: (delay: Int64, url: [UInt8]?)?
        var baseHref: [UInt8]?
        walk(root, enter: { node in
            switch elementName(node) {
            case "meta"? where refresh == nil:
                if attribute(node, "http-equiv").map(asciiLowercased) == Array("refresh".utf8) {
                    refresh = parseRefresh(attribute(node, "content") ?? [])
                }
            case "base"? where baseHref == nil:
                baseHref = attribute(node, "href")
            default:
                break
            }
            return true
        })
        guard let refresh else { return nil }
        var table = LuaTable()
        table["delay"] = .integer(refresh.delay)
        if let url = refresh.url.map(urlText), !url.isEmpty {
            table["url"] = .text(baseURL.map { documentBase($0, href: baseHref).resolving(URLReference(url)).text } ?? url)
        }
        return .table(table)
    }

    /// A refresh's `content`, read as HTML's declarative refresh steps read it: a delay
    /// (any fraction ignored), then optionally `;` or `,`, `URL=` and a URL, perhaps quoted.
    /// Nil when there is no delay.
    private static func parseRefresh(_ content: [UInt8]) -> (delay: Int64, url: [UInt8]?)? {
        let isDigit = { (byte: UInt8) in (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) }
        var rest = content[...].drop(while: isASCIIWhitespace)
        let digits = rest.prefix(while: isDigit)
        guard !digits.isEmpty || rest.first == UInt8(ascii: ".") else { return nil }
        let delay = digits.isEmpty ? 0 : Int64(String(decoding: digits, as: UTF8.self)) ?? .max
        rest = rest.drop(while: { isDigit($0) || $0 == UInt8(ascii: ".") }).drop(while: isASCIIWhitespace)
        if rest.first == UInt8(ascii: ";") || rest.first == UInt8(ascii: ",") { rest = rest.dropFirst() }
        var url = rest.drop(while: isASCIIWhitespace)
        guard !url.isEmpty else { return (delay, nil) }
        if asciiLowercased(Array(url.prefix(3))) == Array("url".utf8) {
            let afterName = url.dropFirst(3).drop(while: isASCIIWhitespace)
            // `URL` not followed by `=` is the start of the URL itself.
            guard afterName.first == UInt8(ascii: "=") else { return (delay, Array(url)) }
            url = afterName.dropFirst().drop(while: isASCIIWhitespace)
        }
        if let quote = url.first, quote == UInt8(ascii: "'") || quote == UInt8(ascii: "\"") {
            url = url.dropFirst().prefix { $0 != quote }
        }
        return (delay, Array(url))
    }

    // MARK: Helpers

    /// The text of an element and everything in it, white space collapsed: a button's or a link's label.
    private static func allText(of element: MarkupNode) -> [UInt8] {
        var collected = CollapsedText()
        walk(element, enter: { node in
            if let content = text(node) { collected.append(content) }
            return true
        })
        return collected.bytes
    }

    /// The URL relative ones resolve against: the page's own, or its `<base href>`.
    private static func documentBase(_ baseURL: String, href: [UInt8]?) -> URLReference {
        let page = URLReference(baseURL)
        return href.map { page.resolving(URLReference(urlText($0))) } ?? page
    }

    /// A URL attribute as browsers read it: tabs and newlines dropped, spaces and control
    /// characters trimmed from both ends.
    private static func urlText(_ bytes: [UInt8]) -> String {
        let kept = bytes.filter { $0 != 0x09 && $0 != 0x0A && $0 != 0x0D }
        guard let first = kept.firstIndex(where: { $0 > 0x20 }), let last = kept.lastIndex(where: { $0 > 0x20 }) else { return "" }
        return String(decoding: kept[first...last], as: UTF8.self)
    }
}
