internal import CCurl
#if canImport(Glibc)
import Glibc
#endif
import Locking
public import HotspotCore

/// Cookies of one helper on one network session, in libcurl's cookie engine (domain,
/// path, expiry and `Secure` as curl applies them), that session's open connections, and
/// the names it resolved. Requests of the same session share the jar, reuse a connection
/// still open to the same host, port and interface, and an address resolved while its
/// time to live lasts, as a browser does, instead of opening one and asking the resolver
/// each request; a new session starts with an empty jar, no connection and no names.
public final class CookieJar: @unchecked Sendable {
    // Unchecked: the share handle is only touched while holding `lock`, so one request
    // at a time uses it.
    private var share: UnsafeMutableRawPointer?
    private let lock = PlainLock(())
    private let resolvedNames = PlainLock<[String: KnownName]>([:])

    private struct KnownName {
        let resolved: ResolvedName
        let binding: NetworkBinding
        let expiry: ContinuousClock.Instant
    }

    /// The share is made by the first request, so a jar costs nothing until then, and
    /// libcurl is loaded only by a process that makes requests.
    public init() {}

    fileprivate func withShare<T>(_ body: (UnsafeMutableRawPointer) throws(HTTPFailure) -> T) throws(HTTPFailure) -> T {
        let result: Result<T, HTTPFailure> = lock.withLock { _ in
            if share == nil, let made = hh_curl_share_init() {
                hh_curl_share_set_long(made, CURLSHOPT_SHARE, Int(CURL_LOCK_DATA_COOKIE.rawValue))
                // Without lock callbacks: one transfer at a time uses the share (under `lock`).
                hh_curl_share_set_long(made, CURLSHOPT_SHARE, Int(CURL_LOCK_DATA_CONNECT.rawValue))
                share = made
            }
            guard let share else { return .failure(HTTPFailure(.protocol, "libcurl could not make a cookie jar")) }
            do throws(HTTPFailure) { return .success(try body(share)) } catch { return .failure(error) }
        }
        return try result.get()
    }

    deinit {
        if let share { hh_curl_share_cleanup(share) }
    }

    /// A jar's limits, as browsers keep theirs: without them a portal setting new cookies at
    /// every hop grew a worker by 80 MB in two minutes, outside every script's memory cap,
    /// and slowed each request as the jar was sent and searched.
    public static let maximumCookieSize = 4096
    public static let maximumCookiesPerDomain = 50
    public static let maximumCookies = 300
    /// The connections a jar keeps open between requests: a login goes to its portal's one
    /// or two hosts.
    public static let maximumIdleConnections = 2
    /// The names a jar remembers, and for how long at most whatever their time to live: a
    /// login's requests go to a few names within seconds.
    public static let maximumResolvedNames = 16
    public static let maximumNameAge: Duration = .seconds(60)

    /// The addresses of `host` through `binding`'s resolvers: those this session resolved
    /// while their time to live lasts, else a new answer, which is kept as long as it lives.
    func addresses(of host: String, binding: NetworkBinding,
                   deadline: ContinuousClock.Instant) throws(HTTPFailure) -> [String] {
        let now = ContinuousClock.now
        if let known = resolvedNames.withLock({ $0[host] }), known.binding == binding, known.expiry > now {
            return known.resolved.addresses
        }
        let resolved = try BoundDNS.lookup(host, binding: binding, deadline: deadline)
        let lifetime = min(resolved.timeToLive, Self.maximumNameAge)
        guard lifetime > .zero else { return resolved.addresses }
        resolvedNames.withLock { names in
            if names.count >= Self.maximumResolvedNames { names = names.filter { $0.value.expiry > now } }
            if names.count < Self.maximumResolvedNames || names[host] != nil {
                names[host] = KnownName(resolved: resolved, binding: binding, expiry: now.advanced(by: lifetime))
            }
        }
        return resolved.addresses
    }

    /// After a request, drops what is over the limits from the handle's jar: cookies over
    /// `maximumCookieSize`, the oldest of a domain past `maximumCookiesPerDomain`, the oldest
    /// past `maximumCookies` (libcurl lists the newest of a domain last).
    static func keepWithinLimits(_ handle: UnsafeMutableRawPointer) {
        var list: UnsafeMutablePointer<curl_slist>?
        guard hh_curl_get_cookies(handle, &list) == CURLE_OK, let first = list else { return }
        defer { hh_curl_slist_free_all(first) }
        var lines: [String] = []
        var node: UnsafeMutablePointer<curl_slist>? = first
        while let current = node {
            if let data = current.pointee.data { lines.append(String(cString: data)) }
            node = current.pointee.next
        }
        let kept = linesWithinLimits(lines)
        guard kept.count < lines.count else { return }
        hh_curl_set_string(handle, CURLOPT_COOKIELIST, "ALL")
        for line in kept { hh_curl_set_string(handle, CURLOPT_COOKIELIST, line) }
    }

    /// The Netscape cookie lines (domain, flag, path, secure, expiry, name, value) to keep.
    package static func linesWithinLimits(_ lines: [String]) -> [String] {
        let small = lines.filter { $0.utf8.count <= maximumCookieSize }
        var perDomain: [Substring: Int] = [:]
        var kept: [String] = []
        // From the newest: a domain keeps its latest cookies.
        for line in small.reversed() {
            let domain = line.prefix { $0 != "\t" }
            perDomain[domain, default: 0] += 1
            if perDomain[domain]! <= maximumCookiesPerDomain { kept.append(line) }
        }
        return Array(kept.prefix(maximumCookies).reversed())
    }
}

/// HTTP requests that leave by one network's interface, resolve names through that
/// network's resolvers, reach only allowed hosts (every redirect hop is checked before
/// anything is sent to it), keep cookies in a jar, and end by a deadline.
public struct BoundHTTPClient: Sendable {
    public var binding: NetworkBinding
    public var allowedHosts: [HostPattern]
    public var cookies: CookieJar?
    public var userAgent: String
    /// Where each hop's request and response go as well, when failures are recorded.
    public var exchangeLog: ExchangeLog?

    public init(binding: NetworkBinding = NetworkBinding(), allowedHosts: [HostPattern], cookies: CookieJar? = nil,
                userAgent: String = "hotspot-helper/1", exchangeLog: ExchangeLog? = nil) {
        self.binding = binding
        self.allowedHosts = allowedHosts
        self.cookies = cookies
        self.userAgent = userAgent
        self.exchangeLog = exchangeLog
    }

    /// Why libcurl cannot be used (not installed, or its initialisation failed), or nil
    /// once it is loaded and initialised: the first request loads it, or waits for what is
    /// left of `loadLibraryInBackground`'s load.
    static let libcurlFailure: String? = hh_curl_load().map { String(cString: $0) }

    /// Starts loading libcurl on a thread of its own, for a process that will make requests
    /// soon: the first request then waits only for what is left of the load (about 1.7 ms of
    /// CPU for the project's libcurl with OpenSSL, 4 for Debian's).
    public static func loadLibraryInBackground() {
        hh_curl_load_in_background()
    }

    /// Performs `request`, ending by the earlier of its timeout and `deadline`; stops
    /// early when `isCancelled` turns true.
    public func perform(_ request: HTTPRequest, deadline: ContinuousClock.Instant? = nil,
                        isCancelled: @escaping () -> Bool = { false }) throws(HTTPFailure) -> HTTPResponse {
        if let failure = Self.libcurlFailure { throw HTTPFailure(.protocol, "cannot use libcurl: \(failure)") }
        let timeoutEnd = ContinuousClock.now.advanced(by: request.timeout)
        let end = min(timeoutEnd, deadline ?? timeoutEnd)
        var method = request.method.uppercased()
        var body = request.body
        var url = request.url
        var redirects: [(status: Int, url: String)] = []
        while true {
            let hop = try recordedTransfer(method: method, url: url, headers: request.headers, body: body,
                                           maxBody: request.maxBody, end: end, isCancelled: isCancelled)
            guard request.followRedirects, [301, 302, 303, 307, 308].contains(hop.status),
                  let location = hop.header("location") else {
                return HTTPResponse(status: hop.status, headers: hop.headers, body: hop.body, url: url,
                                    redirects: redirects)
            }
            var next = URLReference(url).resolving(URLReference(location))
            next.fragment = nil
            redirects.append((hop.status, next.text))
            guard redirects.count <= request.maxRedirects else {
                throw HTTPFailure(.redirectLoop, "more than \(request.maxRedirects) redirects, the last to \(next.text)")
            }
            // What browsers do: 303, and 301/302 after a POST, continue as GET without a body.
            if hop.status == 303 && method != "HEAD" || [301, 302].contains(hop.status) && method == "POST" {
                method = "GET"
                body = nil
            }
            url = next.text
        }
    }

    /// `transfer`, and what it sent and got in the exchange log when there is one.
    private func recordedTransfer(method: String, url: String, headers: [(name: String, value: String)], body: [UInt8]?,
                                  maxBody: Int, end: ContinuousClock.Instant,
                                  isCancelled: @escaping () -> Bool) throws(HTTPFailure) -> HTTPResponse {
        guard let exchangeLog else {
            return try transfer(method: method, url: url, headers: headers, body: body, maxBody: maxBody, end: end, isCancelled: isCancelled)
        }
        let started = HTTPExchange.now, start = ContinuousClock.now
        var exchange = HTTPExchange(started: started, method: method, url: url,
                                    requestHeaders: [("User-Agent", userAgent)] + headers, requestBody: body,
                                    status: 0, responseHeaders: [], responseBody: [], milliseconds: 0)
        defer {
            exchange.milliseconds = Double(start.duration(to: .now) / .microseconds(1)) / 1000
            exchangeLog.append(exchange)
        }
        do throws(HTTPFailure) {
            let hop = try transfer(method: method, url: url, headers: headers, body: body, maxBody: maxBody, end: end, isCancelled: isCancelled)
            (exchange.status, exchange.responseHeaders, exchange.responseBody) = (hop.status, hop.headers, hop.body)
            return hop
        } catch {
            exchange.failure = error.description
            throw error
        }
    }

    /// One request to one URL, without following redirects.
    private func transfer(method: String, url: String, headers: [(name: String, value: String)], body: [UInt8]?,
                          maxBody: Int, end: ContinuousClock.Instant,
                          isCancelled: @escaping () -> Bool) throws(HTTPFailure) -> HTTPResponse {
        let target = URLReference(url)
        guard let scheme = target.scheme, scheme == "http" || scheme == "https" else {
            throw HTTPFailure(.notAllowed, "\(url) (only http and https URLs)")
        }
        guard let parts = target.hostParts, !parts.host.isEmpty else {
            throw HTTPFailure(.protocol, "\(url) has no host")
        }
        guard allowedHosts.contains(where: { $0.matches(parts.host) }) else {
            throw HTTPFailure(.notAllowed, parts.host)
        }
        let port = parts.port ?? (scheme == "https" ? 443 : 80)
        var resolved: [String] = []
        if !binding.resolvers.isEmpty, !Self.isAddressLiteral(parts.host) {
            if let cookies {
                resolved = try cookies.addresses(of: parts.host, binding: binding, deadline: end)
            } else {
                resolved = try BoundDNS.lookup(parts.host, binding: binding, deadline: end).addresses
            }
        }

        guard let handle = hh_curl_easy_init() else { throw HTTPFailure(.protocol, "libcurl could not start a transfer") }
        defer { hh_curl_easy_cleanup(handle) }
        let state = TransferState(maxBody: maxBody, isCancelled: isCancelled)
        let context = Unmanaged.passRetained(state)
        defer { context.release() }
        var lists = CurlLists()
        defer { lists.free() }

        hh_curl_set_string(handle, CURLOPT_URL, url)
        hh_curl_set_long(handle, CURLOPT_NOSIGNAL, 1)
        hh_curl_set_long(handle, CURLOPT_FOLLOWLOCATION, 0)
        hh_curl_set_string(handle, CURLOPT_PROTOCOLS_STR, "http,https")
        hh_curl_set_string(handle, CURLOPT_USERAGENT, userAgent)
        hh_curl_set_string(handle, CURLOPT_ACCEPT_ENCODING, "")
        // The compressed length is a lower bound of the body: refuse early what is surely too big.
        hh_curl_set_offset(handle, CURLOPT_MAXFILESIZE_LARGE, curl_off_t(maxBody))
        let remaining = max(ContinuousClock.now.duration(to: end) / .milliseconds(1), 1)
        hh_curl_set_long(handle, CURLOPT_TIMEOUT_MS, Int(remaining))
        if let interface = binding.interface { hh_curl_set_string(handle, CURLOPT_INTERFACE, "if!" + interface) }
        if let caFile = binding.caFile { hh_curl_set_string(handle, CURLOPT_CAINFO, caFile) }
        if !resolved.isEmpty {
            // libcurl takes IPv6 addresses in brackets here.
            let entry = "\(parts.host):\(port):" + resolved.map { $0.contains(":") ? "[\($0)]" : $0 }.joined(separator: ",")
            hh_curl_set_pointer(handle, CURLOPT_RESOLVE, lists.append(entry, to: \.resolve))
        }
        for header in headers { lists.append("\(header.name): \(header.value)", to: \.headers) }
        if lists.headers != nil { hh_curl_set_pointer(handle, CURLOPT_HTTPHEADER, lists.headers) }
        switch method {
        case "HEAD": hh_curl_set_long(handle, CURLOPT_NOBODY, 1)
        case "GET" where body == nil: hh_curl_set_long(handle, CURLOPT_HTTPGET, 1)
        case "POST": break
        // Giving a body makes libcurl send a POST; any other method is named outright.
        default: hh_curl_set_string(handle, CURLOPT_CUSTOMREQUEST, method)
        }
        if body != nil || method == "POST" {
            let bytes = body ?? []
            hh_curl_set_offset(handle, CURLOPT_POSTFIELDSIZE_LARGE, curl_off_t(bytes.count))
            // A terminating zero, so even an empty body has an address to copy from.
            (bytes + [0]).withUnsafeBytes {
                _ = hh_curl_set_pointer(handle, CURLOPT_COPYPOSTFIELDS, UnsafeMutableRawPointer(mutating: $0.baseAddress!))
            }
        }
        hh_curl_set_data_callback(handle, CURLOPT_WRITEFUNCTION, TransferState.receiveBody)
        hh_curl_set_pointer(handle, CURLOPT_WRITEDATA, context.toOpaque())
        hh_curl_set_data_callback(handle, CURLOPT_HEADERFUNCTION, TransferState.receiveHeader)
        hh_curl_set_pointer(handle, CURLOPT_HEADERDATA, context.toOpaque())
        hh_curl_set_progress_callback(handle, TransferState.progress)
        hh_curl_set_pointer(handle, CURLOPT_XFERINFODATA, context.toOpaque())
        // libcurl's own words for a failure: for TLS, which check failed (self-signed, expired,
        // unknown issuer, another name), where its error code says only "not OK".
        let errorBuffer = UnsafeMutablePointer<CChar>.allocate(capacity: Int(CURL_ERROR_SIZE))
        errorBuffer.initialize(repeating: 0, count: Int(CURL_ERROR_SIZE))
        defer { errorBuffer.deallocate() }
        hh_curl_set_pointer(handle, CURLOPT_ERRORBUFFER, errorBuffer)

        let code: CURLcode
        if let cookies {
            code = try cookies.withShare { share throws(HTTPFailure) in
                hh_curl_set_pointer(handle, CURLOPT_SHARE, share)
                // A jar outlives its session (a worker keeps `jarLimit` of them), and so do its
                // idle connections: a few at most, the oldest closed first.
                hh_curl_set_long(handle, CURLOPT_MAXCONNECTS, CookieJar.maximumIdleConnections)
                hh_curl_set_string(handle, CURLOPT_COOKIEFILE, "")
                defer { hh_curl_set_pointer(handle, CURLOPT_SHARE, nil) }
                let code = hh_curl_easy_perform(handle)
                CookieJar.keepWithinLimits(handle)
                return code
            }
        } else {
            code = hh_curl_easy_perform(handle)
        }
        if code != CURLE_OK {
            throw failure(code, state: state, host: parts.host, url: url, handle: handle, detail: String(cString: errorBuffer))
        }
        var status = 0
        hh_curl_get_long(handle, CURLINFO_RESPONSE_CODE, &status)
        return HTTPResponse(status: status, headers: state.headers, body: state.body, url: url, redirects: [])
    }

    private func failure(_ code: CURLcode, state: TransferState, host: String, url: String,
                         handle: UnsafeMutableRawPointer, detail: String) -> HTTPFailure {
        if let limit = state.exceeded { return HTTPFailure(.tooLarge, limit) }
        if state.cancelled { return HTTPFailure(.timeout, "the command was cancelled") }
        let reason = String(cString: hh_curl_easy_strerror(code))
        switch code {
        case CURLE_OPERATION_TIMEDOUT:
            return HTTPFailure(.timeout, "\(url) did not answer in time")
        case CURLE_COULDNT_RESOLVE_HOST:
            return HTTPFailure(.dns, "cannot resolve \(host)")
        case CURLE_COULDNT_CONNECT, CURLE_INTERFACE_FAILED:
            var errorNumber = 0
            hh_curl_get_long(handle, CURLINFO_OS_ERRNO, &errorNumber)
            let why = errorNumber != 0 ? String(cString: strerror(Int32(errorNumber))) : reason
            return HTTPFailure(.connect, "\(host): \(why)")
        case CURLE_FILESIZE_EXCEEDED:
            return HTTPFailure(.tooLarge, "the body is larger than \(state.maxBody) bytes")
        case CURLE_OUT_OF_MEMORY:
            // libcurl buffers a header line whole and refuses one over 100 KiB this way; the
            // lines it hands on count against `headerLimit` above.
            return HTTPFailure(.tooLarge, "a header line is longer than 100 KiB")
        case CURLE_SSL_CONNECT_ERROR, CURLE_PEER_FAILED_VERIFICATION, CURLE_SSL_CERTPROBLEM, CURLE_SSL_CIPHER,
             CURLE_SSL_CACERT_BADFILE, CURLE_SSL_ISSUER_ERROR, CURLE_SSL_PINNEDPUBKEYNOTMATCH,
             CURLE_SSL_INVALIDCERTSTATUS, CURLE_USE_SSL_FAILED, CURLE_SSL_ENGINE_INITFAILED,
             CURLE_SSL_SHUTDOWN_FAILED, CURLE_SSL_CRL_BADFILE:
            var verifyResult = 0
            hh_curl_get_long(handle, CURLINFO_SSL_VERIFYRESULT, &verifyResult)
            // OpenSSL's X509_V_ERR_* number, for the failures whose words name no check.
            let check = verifyResult != 0 && !detail.contains("certificate problem") ? " (certificate verify result \(verifyResult))" : ""
            let advice = code == CURLE_PEER_FAILED_VERIFICATION ? "; see \"A portal with a bad certificate\" in docs/OPERATIONS.md" : ""
            return HTTPFailure(.tls, "\(host): \(detail.isEmpty ? reason : detail)\(check)\(advice)")
        default:
            return HTTPFailure(.protocol, "\(url): \(reason)")
        }
    }

    static func isAddressLiteral(_ host: String) -> Bool {
        var v4 = in_addr()
        var v6 = in6_addr()
        return inet_pton(AF_INET, host, &v4) == 1 || inet_pton(AF_INET6, host, &v6) == 1
    }
}

/// What one transfer collects, and the limits its callbacks apply.
private final class TransferState {
    static let headerLimit = 65_536

    let maxBody: Int
    let isCancelled: () -> Bool
    var body: [UInt8] = []
    var headers: [(name: String, value: String)] = []
    var headerBytes = 0
    /// Why the transfer was cut for size.
    var exceeded: String?
    var cancelled = false

    init(maxBody: Int, isCancelled: @escaping () -> Bool) {
        self.maxBody = maxBody
        self.isCancelled = isCancelled
    }

    private static func state(_ context: UnsafeMutableRawPointer?) -> TransferState {
        Unmanaged<TransferState>.fromOpaque(context!).takeUnretainedValue()
    }

    /// Bodies arrive decoded (ACCEPT_ENCODING), so this counts the decompressed size.
    static let receiveBody: hh_curl_data_callback = { data, size, count, context in
        let state = state(context)
        let length = size * count
        guard state.body.count + length <= state.maxBody else {
            state.exceeded = "the body is larger than \(state.maxBody) bytes (after decompression)"
            return 0
        }
        if let data { state.body.append(contentsOf: UnsafeRawBufferPointer(start: data, count: length)) }
        return length
    }

    static let receiveHeader: hh_curl_data_callback = { data, size, count, context in
        let state = state(context)
        let length = size * count
        state.headerBytes += length
        guard state.headerBytes <= headerLimit else {
            state.exceeded = "the headers are larger than \(headerLimit) bytes"
            return 0
        }
        guard let data else { return length }
        let line = String(decoding: UnsafeRawBufferPointer(start: data, count: length), as: UTF8.self)
        if line.hasPrefix("HTTP/") {
            // A new response (after 100 Continue, say): only the last one's headers count.
            state.headers = []
        } else if let colon = line.firstIndex(of: ":") {
            let name = line[..<colon].lowercased()
            let value = line[line.index(after: colon)...].trimmingWhitespace()
            state.headers.append((name, value))
        }
        return length
    }

    static let progress: hh_curl_progress_callback = { context, _, _, _, _ in
        let state = state(context)
        if state.isCancelled() {
            state.cancelled = true
            return 1
        }
        return 0
    }
}

/// libcurl string lists a transfer owns until it ends.
private struct CurlLists {
    var headers: UnsafeMutablePointer<curl_slist>?
    var resolve: UnsafeMutablePointer<curl_slist>?

    @discardableResult
    mutating func append(_ text: String, to list: WritableKeyPath<CurlLists, UnsafeMutablePointer<curl_slist>?>)
        -> UnsafeMutablePointer<curl_slist>? {
        self[keyPath: list] = hh_curl_slist_append(self[keyPath: list], text)
        return self[keyPath: list]
    }

    func free() {
        hh_curl_slist_free_all(headers)
        hh_curl_slist_free_all(resolve)
    }
}
