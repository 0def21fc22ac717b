/// What `har import` tells the person about a recording: what it found, and what it left
/// out. Values are shown only with `keepValues`; otherwise a field says what kind it was.
public enum ImportReport {
    public static func lines(_ login: PortalLogin, redaction: Redaction, keepValues: Bool) -> [String] {
        var lines = ["\(login.source): \(login.exchanges.count) requests"]
        lines.append("probe       \(login.probe.method) \(login.probe.url.withoutQuery) answered \(login.probe.status) (\(login.probe.label))")
        for redirect in login.redirects.dropFirst() {
            lines.append("redirect    \(redirect.status) from \(redirect.url.withoutQuery)")
        }
        lines.append("portal      \(login.landing.url.withoutQuery) (\(login.landing.label))")
        for page in login.pages where page.entry != login.landing.entry {
            lines.append("page        \(page.method) \(page.url.withoutQuery) answered \(page.status)")
        }
        for (index, step) in login.steps.enumerated() {
            let kind = step.form == nil ? "call" : "form"
            lines.append("step \(index + 1)      \(kind) \(step.request.method) \(step.request.url.withoutQuery) answered \(step.request.status) (\(step.request.label))")
            for field in step.fields {
                lines.append("              \(field.name): " + describe(field, keepValues: keepValues))
            }
        }
        for call in login.apiCalls {
            lines.append("api         \(call.method) \(call.url.withoutQuery) answered \(call.status)")
        }
        if let open = login.openCheck {
            lines.append("open        after \(login.openedAfter.label): \(open.method) \(open.url.withoutQuery) answered \(open.status)")
        } else {
            lines.append("open        not shown: taken as open after \(login.openedAfter.label)")
        }
        if let logoff = login.logoff { lines.append("logoff      \(logoff.method) \(logoff.url.withoutQuery)") }
        lines.append("hosts       " + login.portalHosts.joined(separator: ", "))
        lines.append("stripped    " + (keepValues ? "nothing typed (--keep-values); " : "") + redaction.summary)
        return lines
    }

    static func describe(_ field: SubmittedField, keepValues: Bool) -> String {
        switch field.role {
        case .typed(let kind): "typed, \(kind.rawValue)" + (keepValues ? " \"\(field.value)\"" : " [stripped]")
        case .token: "a token from the page [stripped]"
        case .fromPage: "from the page"
        case .fromAddress(let parameter): "from the page's address (\(parameter))"
        case .ticked: "ticked"
        case .button: "the button clicked"
        case .fixed: keepValues || field.value.count < 4 ? "fixed \"\(field.value)\"" : "fixed [stripped]"
        }
    }
}
