import Hummingbird
import PortalRecording

/// The building blocks of the portals' pages and answers.
enum Pages {
    /// The body Apple's probe expects once the client is online.
    static let appleSuccess = "<HTML><HEAD><TITLE>Success</TITLE></HEAD><BODY>Success</BODY></HTML>"

    static func escape(_ text: String) -> String {
        var escaped = ""
        escaped.reserveCapacity(text.utf8.count)
        for character in text {
            switch character {
            case "&": escaped += "&amp;"
            case "<": escaped += "&lt;"
            case ">": escaped += "&gt;"
            case "\"": escaped += "&quot;"
            case "'": escaped += "&#39;"
            default: escaped.append(character)
            }
        }
        return escaped
    }

    /// A whole HTML page; `body` is markup, `title` and `error` are text.
    static func page(title: String, error: String? = nil, body: String) -> String {
        let errorParagraph = error.map { "<p class=\"error\" role=\"alert\">\(escape($0))</p>\n" } ?? ""
        return """
            <!DOCTYPE html>
            <html lang="en">
            <head><meta charset="utf-8"><title>\(escape(title))</title></head>
            <body>
            <h1>\(escape(title))</h1>
            \(errorParagraph)\(body)
            </body>
            </html>

            """
    }

    /// The page after a login; says how long the session lasts when it runs out.
    static func connected(venue: String, sessionLength: Duration?) -> String {
        let length = sessionLength.map { "<p>Your session lasts \($0.components.seconds) seconds.</p>\n" } ?? ""
        return page(title: "\(venue) Wi-Fi", body: "<p id=\"connected\">You are connected.</p>\n\(length)<p><a href=\"/logout\">Log out</a></p>")
    }

    /// A click-through form: a terms checkbox that must be checked, posted to `action`; with
    /// `declineButton`, a second submit button that declines.
    static func termsForm(venue: String, action: String, error: String? = nil, declineButton: Bool = false) -> String {
        let decline = declineButton ? "\n<button type=\"submit\" name=\"decline\" value=\"1\">I decline</button>" : ""
        return page(title: "\(venue) Wi-Fi", error: error, body: """
            <form method="post" action="\(escape(action))">
            <p><label><input type="checkbox" name="accept_terms" value="yes"> I accept the terms of use</label></p>
            <p><button type="submit" name="connect" value="1">Connect</button>\(decline)</p>
            </form>
            """)
    }

    /// Whether a click-through form came back with its box checked, and not declined (a
    /// browser sends only the button clicked).
    static func acceptsTerms(_ form: [String: String]) -> Bool {
        form["accept_terms"] == "yes" && form["decline"] == nil
    }
}

extension Response {
    static func html(_ text: String, status: HTTPResponse.Status = .ok, headers: HTTPFields = [:]) -> Response {
        var headers = headers
        headers[.contentType] = "text/html; charset=utf-8"
        headers[.cacheControl] = "no-store"
        return Response(status: status, headers: headers, body: .init(byteBuffer: ByteBuffer(string: text)))
    }

    /// A redirect with a small page linking to `location`, as portals send.
    static func redirection(to location: String, status: HTTPResponse.Status = .found, page: String? = nil) -> Response {
        let text = page ?? Pages.page(title: "Redirecting", body: "<p><a href=\"\(Pages.escape(location))\">Continue</a></p>")
        return html(text, status: status, headers: [.location: location])
    }

    static func text(_ text: String, contentType: String, status: HTTPResponse.Status = .ok) -> Response {
        Response(
            status: status, headers: [.contentType: contentType, .cacheControl: "no-store"],
            body: .init(byteBuffer: ByteBuffer(string: text)))
    }
}

/// `application/x-www-form-urlencoded`, as forms post it and queries carry it.
enum FormEncoding {
    /// The fields of `text`; of repeated names the last one wins.
    static func decode(_ text: some StringProtocol) -> [String: String] {
        Dictionary(FormFields.decode(text), uniquingKeysWith: { $1 })
    }

    /// `pairs` in their order, everything but `A-Za-z0-9-_.~` percent-encoded.
    static func encode(_ pairs: [(String, String)]) -> String {
        pairs.map { escape($0.0) + "=" + escape($0.1) }.joined(separator: "&")
    }

    private static func escape(_ text: String) -> String {
        text.utf8.map { byte in
            let unreserved = (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(byte) || (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte)
                || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) || "-_.~".utf8.contains(byte)
            return unreserved ? String(UnicodeScalar(byte)) : "%" + String(byte >> 4, radix: 16, uppercase: true) + String(byte & 15, radix: 16, uppercase: true)
        }.joined()
    }
}

/// Random tokens for cookies, CSRF fields and tickets.
func randomToken() -> String {
    (0..<2).map { _ in
        let hex = String(UInt64.random(in: .min ... .max), radix: 16)
        return String(repeating: "0", count: 16 - hex.count) + hex
    }.joined()
}
