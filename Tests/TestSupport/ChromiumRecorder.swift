#if canImport(Glibc)
import Glibc
#endif
public import Foundation

/// A person's login recorded by a real headless Chromium: what its DevTools Network events
/// say, written as HAR 1.2 the way Chromium's own "Save all as HAR" writes it.
public final class ChromiumRecorder {
    public let browser: HeadlessBrowser
    /// Each finished response's body, fetched before the page that loaded it goes away
    /// (Chromium drops a page's bodies once the tab navigates on), as DevTools does.
    private var bodies: [String: [String: Any]] = [:]

    public init(resolvingEveryNameTo address: String) throws {
        // Every name the portal uses reaches the simulator, as the venue's DNS hijack would.
        browser = try HeadlessBrowser(arguments: ["--host-resolver-rules=MAP * \(address)", "--proxy-server=direct://"])
    }

    /// A browser `launcher` starts (see `HeadlessBrowser`), resolving names as its network does.
    public init(launcher: [String]) throws {
        browser = try HeadlessBrowser(arguments: ["--proxy-server=direct://"], launcher: launcher)
    }

    /// Opens a tab with the Network domain enabled, at `url`.
    public func open(_ url: String) throws {
        try browser.open("about:blank")
        try browser.send("Network.enable", ["maxPostDataSize": 65536])
        // A captive client's every request restarts redirect-chain's ticket, a favicon's too,
        // which a person would answer by submitting again; the recorder keeps to the pages.
        try browser.send("Network.setBlockedURLs", ["urls": ["*/favicon.ico"]])
        try browser.send("Page.enable")
        try browser.send("Page.navigate", ["url": url])
        try waitUntil("document.readyState === 'complete' && location.href !== 'about:blank'")
    }

    /// Waits until `expression` is true in the page, through the navigations meanwhile (an
    /// evaluation the page's navigation interrupts is tried again).
    public func waitUntil(_ expression: String, within limit: Duration = .seconds(20)) throws {
        guard holdsBlocking(within: limit, { (try? browser.evaluate(expression)) as? Bool == true }) else {
            throw HeadlessBrowser.Failure(description: "never true within \(limit): \(expression)")
        }
    }

    /// How many responses to `url` the browser has received so far (a 204's navigation ends
    /// there, without the load finishing).
    public func responses(to url: String) -> Int {
        browser.events.filter { event in
            let parameters = event["params"] as? [String: Any]
            return event["method"] as? String == "Network.responseReceived"
                && (parameters?["response"] as? [String: Any])?["url"] as? String == url
        }.count
    }

    /// Waits until the browser has received more responses to `url` than `count`, the ones before.
    public func waitForResponse(to url: String, beyond count: Int, within limit: Duration = .seconds(10)) throws {
        guard holdsBlocking(within: limit, {
            _ = try? browser.evaluate("true")  // the browser's events arrive with a reply
            return responses(to: url) > count
        }) else {
            throw HeadlessBrowser.Failure(description: "no response to \(url) within \(limit)")
        }
    }

    /// Fills in the page's form as a person would (every box ticked, what they know typed)
    /// and clicks its button; nil when the page has nothing to submit, else the kinds of
    /// what was typed (the keys of `typed`).
    public func submitAsAPerson(_ typed: [String: String]) throws -> Set<String>? {
        collectBodies()
        let values = String(data: try JSONSerialization.data(withJSONObject: typed), encoding: .utf8)!
        let fill = """
            (() => {
              const typed = \(values);
              const forms = [...document.forms].filter(f => f.querySelector('button, input[type=submit], input[type=image], input[type=button]') || f.querySelector('input:not([type=hidden])'));
              const form = forms[0];
              const declines = /decline|reject|refuse|cancel|disagree|no thanks/i;
              const accepts = b => !declines.test((b.name || '') + ' ' + (b.value || '') + ' ' + b.textContent);
              // A page whose script submits the form has an input of type button (Cisco's WLC);
              // a page that is its script's app (UniFi's) has no form at all.
              const scope = form || document;
              const button = [...scope.querySelectorAll(form ? 'button, input[type=submit], input[type=image]' : 'button')].find(accepts)
                || [...scope.querySelectorAll('input[type=button]')].find(accepts);
              if (!form && !button) return null;
              // The page's script has not yet enabled it: the person waits.
              if (button && button.disabled) return 'wait';
              const kinds = [];
              const hasPassword = [...scope.querySelectorAll('input[type=password]:not([name*=voucher])')].some(f => f.getClientRects().length > 0);
              for (const field of form ? form.elements : document.querySelectorAll('input, textarea, select')) {
                // A field a page's script reads has an id and often no name; a person types
                // only into the fields they see.
                if (field.disabled || !(field.name || field.id)) continue;
                const type = (field.type || '').toLowerCase(), name = (field.name || field.id).toLowerCase();
                if (type !== 'hidden' && field.getClientRects().length === 0) continue;
                if (type === 'checkbox') { field.checked = true; continue; }
                if (['hidden', 'submit', 'button', 'image', 'radio'].includes(type) || field.value) continue;
                if (name.includes('voucher') && hasPassword) continue;
                const kind = type === 'email' || name.includes('mail') ? 'email'
                  : type === 'password' || name.includes('pass') ? 'password'
                  : name.includes('voucher') ? 'voucher'
                  : name.includes('user') || name.includes('login') ? 'username'
                  : ['text', 'tel', 'number', 'textarea', ''].includes(type) ? 'name' : null;
                if (kind) { field.value = typed[kind]; kinds.push(kind); }
              }
              window.__before = true;
              if (button) button.click(); else form.requestSubmit();
              return kinds;
            })()
            """
        var result: Any?
        _ = try holdsBlocking(within: .seconds(10)) {
            result = try browser.evaluate(fill)
            return result as? String != "wait"
        }
        return (result as? [Any]).map { Set($0.compactMap { $0 as? String }) }
    }

    /// Waits for the page the submission leads to (a page's script that stays on the page
    /// is given a few seconds).
    public func waitForNextPage() throws {
        do {
            try waitUntil("window.__before === undefined && document.readyState === 'complete'", within: .seconds(5))
        } catch {
            _ = try? browser.evaluate("delete window.__before")
        }
        collectBodies()
    }

    /// Fetches the bodies of the responses that finished loading since the last call.
    public func collectBodies() {
        let finished = browser.events.filter { $0["method"] as? String == "Network.loadingFinished" }
            .compactMap { ($0["params"] as? [String: Any])?["requestId"] as? String }
        for id in finished where bodies[id] == nil {
            bodies[id] = (try? browser.send("Network.getResponseBody", ["requestId": id])) ?? [:]
        }
    }

    /// Everything the browser sent and received so far, as HAR 1.2.
    public func har() throws -> Data {
        struct Entry {
            let id: String
            var request: [String: Any]
            var wallTime: Double
            var response: [String: Any]?
            var redirected = false
        }
        collectBodies()
        var entries: [Entry] = []
        for event in browser.events {
            let parameters = event["params"] as? [String: Any] ?? [:]
            let id = parameters["requestId"] as? String ?? ""
            switch event["method"] as? String {
            case "Network.requestWillBeSent":
                if let redirect = parameters["redirectResponse"] as? [String: Any], let index = entries.lastIndex(where: { $0.id == id }) {
                    entries[index].response = redirect
                    entries[index].redirected = true
                }
                entries.append(Entry(id: id, request: parameters["request"] as? [String: Any] ?? [:],
                                     wallTime: parameters["wallTime"] as? Double ?? 0))
            case "Network.responseReceived":
                if let index = entries.lastIndex(where: { $0.id == id }) { entries[index].response = parameters["response"] as? [String: Any] }
            default:
                break
            }
        }
        func headerList(_ headers: Any?) -> [[String: String]] {
            (headers as? [String: Any] ?? [:]).sorted { $0.key < $1.key }.flatMap { name, value in
                "\(value)".split(separator: "\n").map { ["name": name, "value": String($0)] }
            }
        }
        var written: [[String: Any]] = []
        for entry in entries {
            let request = entry.request
            var harRequest: [String: Any] = [
                "method": request["method"] ?? "GET", "url": request["url"] ?? "", "httpVersion": "HTTP/1.1",
                "headers": headerList(request["headers"]), "queryString": [], "cookies": [], "headersSize": -1, "bodySize": 0,
            ]
            if let postData = request["postData"] as? String {
                let headers = request["headers"] as? [String: Any] ?? [:]
                let type = headers.first { $0.key.lowercased() == "content-type" }?.value as? String ?? ""
                harRequest["postData"] = ["mimeType": type, "text": postData]
            }
            let response = entry.response ?? [:]
            var content: [String: Any] = ["size": 0, "mimeType": response["mimeType"] ?? ""]
            if entry.response != nil, !entry.redirected, let body = bodies[entry.id] {
                content["text"] = body["body"] ?? ""
                if body["base64Encoded"] as? Bool == true { content["encoding"] = "base64" }
            }
            let started = ISO8601DateFormatter()
            started.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
            written.append([
                "startedDateTime": started.string(from: Date(timeIntervalSince1970: entry.wallTime)), "time": 0,
                "request": harRequest,
                "response": [
                    "status": response["status"] ?? 0, "statusText": response["statusText"] ?? "", "httpVersion": "HTTP/1.1",
                    "headers": headerList(response["headers"]), "cookies": [], "content": content,
                    "redirectURL": "", "headersSize": -1, "bodySize": -1,
                ],
                "cache": [:], "timings": ["send": 0, "wait": 0, "receive": 0],
            ])
        }
        let version = (try? browser.send("Browser.getVersion", toPage: false))?["product"] as? String ?? "Chromium"
        return try JSONSerialization.data(withJSONObject: [
            "log": ["version": "1.2", "creator": ["name": "WebInspector", "version": version], "pages": [], "entries": written],
        ], options: [.prettyPrinted])
    }
}
