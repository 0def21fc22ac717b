import Hummingbird

/// `hostile`: a portal whose pages attack the helper, and a messy but valid login form.
///
///     /login               messy HTML; decoy forms (in a comment, a script, a textarea) post to /trap
///     /huge                50 MiB, streamed without a Content-Length
///     /gzip-bomb           about 65 KB of gzip (Content-Encoding: gzip) inflating to over 64 MiB
///     /drip                one byte every 100 ms, for ever
///     /loop                302 to itself; /loop-a and /loop-b 302 to each other
///     /bad.xml, /bad.json  malformed documents
///     /pathological.html   deep nesting, a 1 MiB attribute, unclosed tags and comments
struct HostilePortal: PortalBehavior {
    static let hugeSize = 50 * 1024 * 1024
    static let dripInterval = Duration.milliseconds(100)
    /// The token of the real form once its entities are decoded.
    static let formToken = #"K7&q="1""#

    let state: PortalState
    let settings: ScenarioSettings

    func loginURL(for request: PortalRequest) -> String { request.url("/login") }

    func respond(to request: PortalRequest) -> Response? {
        if request.isPost {
            switch request.path {
            case "/login": return login(request)
            case "/trap":
                return .html(
                    Pages.page(title: "Wrong form", body: "<p>That form was inside a comment, a script or a textarea.</p>"),
                    status: .badRequest)
            default: return nil
            }
        }
        guard request.isGet else { return nil }
        switch request.path {
        case "/login": return .html(HostileDocuments.messyLogin(venue: settings.venueName))
        case "/huge": return huge()
        case "/gzip-bomb":
            return Response(
                status: .ok, headers: [.contentType: "text/html; charset=utf-8", .contentEncoding: "gzip"],
                body: .init(byteBuffer: ByteBuffer(bytes: GzipBomb.bytes)))
        case "/drip": return drip()
        case "/loop": return .redirection(to: request.url("/loop"))
        case "/loop-a": return .redirection(to: "/loop-b")
        case "/loop-b": return .redirection(to: "/loop-a")
        case "/bad.xml": return .text(HostileDocuments.badXML(request.url("/login")), contentType: "application/xml")
        case "/bad.json": return .text(HostileDocuments.badJSON(request.url("/login")), contentType: "application/json")
        case "/pathological.html": return .html(HostileDocuments.pathologicalHTML)
        default: return nil
        }
    }

    private func login(_ request: PortalRequest) -> Response {
        guard request.form["token"] == Self.formToken else {
            return .html(
                Pages.page(title: "Session error", body: "<p>The form's token is wrong: were its entities decoded?</p>"),
                status: .forbidden)
        }
        guard request.form["agree"] == "yes" else {
            return .html(HostileDocuments.messyLogin(venue: settings.venueName), status: .badRequest)
        }
        state.withClient(request.client) { $0.logIn(for: settings.sessionLength, at: request.now) }
        return .html(Pages.connected(venue: settings.venueName, sessionLength: settings.sessionLength))
    }

    /// Chunked, so the helper cannot refuse it by its length before reading.
    private func huge() -> Response {
        let state = state
        return Response(status: .ok, headers: [.contentType: "text/html; charset=utf-8"], body: .init { writer in
            let line = "<p>" + String(repeating: "welcome ", count: 7) + "</p>\n"  // 64 bytes
            let chunk = ByteBuffer(string: String(repeating: line, count: 1024))
            for _ in 0..<(Self.hugeSize / chunk.readableBytes) where !state.isStopping {
                try await writer.write(chunk)
            }
            try await writer.finish(nil)
        })
    }

    /// Ends when the client goes away (the write fails) or the portal stops.
    private func drip() -> Response {
        let state = state
        return Response(status: .ok, headers: [.contentType: "text/html; charset=utf-8"], body: .init { writer in
            let opening = Array("<html><body><p>Connecting, please wait".utf8)
            var sent = 0
            while !state.isStopping {
                try await writer.write(ByteBuffer(bytes: [sent < opening.count ? opening[sent] : UInt8(ascii: ".")]))
                sent += 1
                try await Task.sleep(for: Self.dripInterval)
            }
            try await writer.finish(nil)
        })
    }
}
