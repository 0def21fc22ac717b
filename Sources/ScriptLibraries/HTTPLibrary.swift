public import LuaSandbox
import HotspotNetwork
import ScriptContract
import Locking

/// The host side of `cmd:http{...}`. Private to the prelude, which passes the command's
/// context (a `HelperContext`: cookie session, interface, resolvers, the script's `hosts`)
/// that no script can forge: `http.request(context, options)` answers a response table or `nil, message`;
/// `http.probe(context)` answers the network's connectivity verdict (the probes in the
/// context's `probes`, in the compact syntax of `Probe.parse`); `http.capport(context)`
/// answers what the network's RFC 8908 Captive Portal API says (nil without one), or `nil, message`;
/// `http.exchanges(context)` hands over the requests the context's session made while it
/// asked for them to be kept (`record_exchanges`), for a recording of a failed attempt.
public enum HTTPLibrary {
    static let largestBody = 16 << 20
    static let largestTimeout = 600.0

    public static let module = HostModule.library(.http, functions: [
        ("request", { (call: borrowing HostCall) throws -> [LuaValue] in
            let context = HelperContext(try call.table(0))
            let request = try request(from: try call.table(1)) { HostError("cmd:http: " + $0) }
            let client = client(for: context)
            let deadline = call.networkDeadline
            // The closure outlives this borrow of `call`, so it reads the flag through the state's copy.
            let interruption = call.interruptionCheck
            do throws(HTTPFailure) {
                return [.table(responseTable(try client.perform(request, deadline: deadline, isCancelled: interruption)))]
            } catch {
                return [.nil, .text(error.description)]
            }
        }),
        ("probe", { (call: borrowing HostCall) throws -> [LuaValue] in
            let context = HelperContext(try call.table(0))
            let set: ProbeSet
            switch ProbeSet.parse(context.probes) {
            case .success(let parsed): set = parsed
            case .failure(let error): throw HostError("cmd:probe: \(error)")
            }
            let deadline = call.networkDeadline
            let interruption = call.interruptionCheck
            var verdict = ConnectivityProbe.run(set, binding: context.binding, deadline: deadline,
                                                findPortalURL: WISPrLibrary.portalURL(in:), exchangeLog: exchangeLog(for: context),
                                                isCancelled: interruption)
            // Captive: the network's Captive Portal API names the portal best of all.
            if verdict.state == .captive, let uri = context.captivePortalAPI,
               let status = try? CaptivePortalAPI.fetch(
                   uri, binding: context.binding, allowsPlainHTTP: context.allowsPlainHTTPCaptivePortalAPI,
                   deadline: deadline, isCancelled: interruption),
               status.captive, let portal = status.userPortalURL {
                verdict.offerPortalURL(portal, from: .captivePortalAPI)
            }
            return [.table(verdictTable(verdict))]
        }),
        ("capport", { (call: borrowing HostCall) throws -> [LuaValue] in
            let context = HelperContext(try call.table(0))
            guard let uri = context.captivePortalAPI else { return [nil] }
            let deadline = call.networkDeadline
            let interruption = call.interruptionCheck
            do throws(HTTPFailure) {
                guard let status = try CaptivePortalAPI.fetch(
                    uri, binding: context.binding, allowsPlainHTTP: context.allowsPlainHTTPCaptivePortalAPI,
                    deadline: deadline, isCancelled: interruption)
                else {
                    return [["captive": false, "unrestricted": true, "api_url": .text(uri)]]
                }
                var table = LuaTable()
                table["api_url"] = .text(uri)
                table["captive"] = .boolean(status.captive)
                table["user_portal_url"] = status.userPortalURL.map(LuaValue.text) ?? nil
                table["venue_info_url"] = status.venueInfoURL.map(LuaValue.text) ?? nil
                table["can_extend_session"] = .boolean(status.canExtendSession)
                table["seconds_remaining"] = status.secondsRemaining.map(wholeIfWhole) ?? nil
                table["bytes_remaining"] = status.bytesRemaining.map(wholeIfWhole) ?? nil
                return [.table(table)]
            } catch {
                return [.nil, .text(error.description)]
            }
        }),
        ("exchanges", { (call: borrowing HostCall) throws -> [LuaValue] in
            let context = HelperContext(try call.table(0))
            let taken = context.session.flatMap { session in
                exchangeLogs.withLock { logs in
                    logs.firstIndex { $0.session == context.helper + "/" + session }.map { logs.remove(at: $0).log }
                }
            }
            return [.table(LuaTable(array: (taken?.take() ?? []).map(exchangeTable)))]
        }),
    ])

    /// An integer when `amount` is a whole number, as scripts compare and print it.
    static func wholeIfWhole(_ amount: Double) -> LuaValue {
        amount == amount.rounded() && abs(amount) < 1e15 ? .integer(Int64(amount)) : .number(amount)
    }

    /// The jars of the sessions this worker has seen; the oldest go first beyond the limit.
    private static let jars = PlainLock<[(session: String, jar: CookieJar)]>([])
    static let jarLimit = 64

    static func jar(for session: String) -> CookieJar {
        jars.withLock { jars in
            if let index = jars.firstIndex(where: { $0.session == session }) {
                let found = jars.remove(at: index)
                jars.append(found)
                return found.jar
            }
            let jar = CookieJar()
            jars.append((session, jar))
            if jars.count > jarLimit { jars.removeFirst() }
            return jar
        }
    }

    static func client(for context: HelperContext) -> BoundHTTPClient {
        // A jar per helper and session: a new session starts empty, and helpers never share.
        let jarName = context.session.map { context.helper + "/" + $0 }
        return BoundHTTPClient(binding: context.binding, allowedHosts: context.hosts, cookies: jarName.map(jar(for:)),
                               exchangeLog: exchangeLog(for: context))
    }

    /// The exchanges kept for recordings, by helper and session; the oldest sessions' go
    /// first beyond the limit (each log is bounded itself: `ExchangeLog.byteLimit`).
    private static let exchangeLogs = PlainLock<[(session: String, log: ExchangeLog)]>([])
    static let exchangeLogLimit = 8

    /// The session's log when its context asks for one, else nil: without a recording of
    /// failures nothing is kept.
    static func exchangeLog(for context: HelperContext) -> ExchangeLog? {
        guard context.recordsExchanges, let session = context.session.map({ context.helper + "/" + $0 }) else { return nil }
        return exchangeLogs.withLock { logs in
            if let found = logs.first(where: { $0.session == session }) { return found.log }
            let log = ExchangeLog()
            logs.append((session, log))
            if logs.count > exchangeLogLimit { logs.removeFirst() }
            return log
        }
    }

    /// One exchange as `exchanges` hands it over, by `ScriptNames.ExchangeKey`.
    static func exchangeTable(_ exchange: HTTPExchange) -> LuaValue {
        typealias Key = ScriptNames.ExchangeKey
        func headers(_ list: [(name: String, value: String)]) -> LuaValue {
            .table(LuaTable(array: list.map { .table(LuaTable(array: [.text($0.name), .text($0.value)])) }))
        }
        var table = LuaTable()
        table[Key.started] = .number(exchange.started)
        table[Key.method] = .text(exchange.method)
        table[Key.url] = .text(exchange.url)
        table[Key.requestHeaders] = headers(exchange.requestHeaders)
        table[Key.requestBody] = exchange.requestBody.map(LuaValue.string) ?? nil
        table[Key.status] = .integer(Int64(exchange.status))
        table[Key.responseHeaders] = headers(exchange.responseHeaders)
        table[Key.responseBody] = .string(exchange.responseBody)
        table[Key.milliseconds] = .number(exchange.milliseconds)
        table[Key.failure] = exchange.failure.map(LuaValue.text) ?? nil
        return .table(table)
    }

    static func request(from options: LuaTable, problem: (String) -> HostError) throws -> HTTPRequest {
        guard let url = options["url"].stringValue else { throw problem("'url' must be a string") }
        var request = HTTPRequest(url: url)
        var contentType: String?
        if let headers = options["headers"].tableValue {
            for (name, value) in headers.entries {
                guard let name = name.stringValue, let value = value.stringValue ?? value.numberValue.map({ "\($0)" }) else {
                    throw problem("'headers' maps names to strings")
                }
                guard !name.contains(where: { $0 == "\r" || $0 == "\n" || $0 == ":" }),
                      !value.contains(where: { $0 == "\r" || $0 == "\n" }) else {
                    throw problem("header '\(name)' has a line break or a colon in its name")
                }
                request.headers.append((name, value))
            }
        }
        let bodies = ["body", "form", "json"].filter { !options[LuaValue.text($0)].isNil }
        guard bodies.count <= 1 else { throw problem("give one of 'body', 'form' and 'json', not \(bodies.joined(separator: " and "))") }
        switch bodies.first {
        case "body":
            guard let body = options["body"].bytesValue else { throw problem("'body' must be a string") }
            request.body = body
        case "form":
            guard let form = options["form"].tableValue else { throw problem("'form' must be a table") }
            let encoded = try URLLibrary.formEncoded(form) { problem("form: \($0)") }
            if let method = options["method"].stringValue?.uppercased(), method == "GET" || method == "HEAD" {
                // A GET form goes in the query, as a browser sends it: a body no portal reads.
                let fragment = url.firstIndex(of: "#") ?? url.endIndex
                let separator = url[..<fragment].contains("?") ? "&" : "?"
                request.url = url[..<fragment] + separator + String(decoding: encoded, as: UTF8.self)
            } else {
                request.body = encoded
                contentType = "application/x-www-form-urlencoded"
            }
        case "json":
            request.body = try JSONLibrary.encoded(options["json"])
            contentType = "application/json"
        default:
            break
        }
        if let method = options["method"].stringValue {
            guard !method.isEmpty, method.allSatisfy({ $0.isLetter && $0.isASCII }) else {
                throw problem("'method' must be a word such as \"GET\" or \"POST\"")
            }
            request.method = method.uppercased()
        } else if request.body != nil {
            request.method = "POST"
        }
        if let contentType, !request.headers.contains(where: { $0.name.lowercased() == "content-type" }) {
            request.headers.append(("Content-Type", contentType))
        }
        if !options["timeout"].isNil {
            request.timeout = try SocketLibrary.seconds(options["timeout"], "cmd:http: 'timeout'")
        }
        if !options["follow_redirects"].isNil {
            guard let follow = options["follow_redirects"].booleanValue else { throw problem("'follow_redirects' must be a boolean") }
            request.followRedirects = follow
        }
        if !options["max_redirects"].isNil {
            guard let count = options["max_redirects"].integerValue, (0...50).contains(count) else {
                throw problem("'max_redirects' must be a whole number from 0 to 50")
            }
            request.maxRedirects = Int(count)
        }
        if !options["max_body"].isNil {
            guard let size = options["max_body"].integerValue, size > 0, size <= largestBody else {
                throw problem("'max_body' must be a whole number of bytes above 0 and at most \(largestBody)")
            }
            request.maxBody = Int(size)
        }
        return request
    }

    /// The table `cmd:probe()` answers.
    static func verdictTable(_ verdict: ConnectivityVerdict) -> LuaTable {
        var table = LuaTable()
        table["state"] = .text(verdict.state.rawValue)
        table["portal_url"] = verdict.portalURL.map(LuaValue.text) ?? nil
        table["portal_url_source"] = verdict.portalURLSource.map { .text($0.rawValue) } ?? nil
        table["interface_kind"] = verdict.interfaceKind.map { .text($0.rawValue) } ?? nil
        table["details"] = .table(LuaTable(array: verdict.details.map(LuaValue.text)))
        return table
    }

    static func responseTable(_ response: HTTPResponse) -> LuaTable {
        var headers = LuaTable()
        var cookies: [LuaValue] = []
        for header in response.headers {
            if header.name == "set-cookie" {
                cookies.append(.text(header.value))
            } else if let earlier = headers[header.name].stringValue {
                headers[header.name] = .text(earlier + ", " + header.value)
            } else {
                headers[header.name] = .text(header.value)
            }
        }
        if !cookies.isEmpty { headers["set-cookie"] = .table(LuaTable(array: cookies)) }
        var table = LuaTable()
        table["status"] = .integer(Int64(response.status))
        table["headers"] = .table(headers)
        table["body"] = .string(response.body)
        table["url"] = .text(response.url)
        table["redirects"] = .table(LuaTable(array: response.redirects.map { redirect -> LuaValue in
            ["status": .integer(Int64(redirect.status)), "url": .text(redirect.url)]
        }))
        return table
    }
}
