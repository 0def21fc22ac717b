import HotspotCore
import JSON

/// What a network's RFC 8908 Captive Portal API says about the device's session.
public struct CaptivePortalStatus: Sendable, Equatable {
    /// Whether the device is held by the portal (`captive`, which the API must give).
    public var captive: Bool
    /// Where a person (or a helper) logs in: `user-portal-url`.
    public var userPortalURL: String?
    /// A page about the venue: `venue-info-url`.
    public var venueInfoURL: String?
    /// Whether the session can be extended before it runs out: `can-extend-session`.
    public var canExtendSession: Bool
    /// `seconds-remaining`: how long the session has left.
    public var secondsRemaining: Double?
    /// `bytes-remaining`: how much traffic the session has left.
    public var bytesRemaining: Double?

    public init(captive: Bool, userPortalURL: String? = nil, venueInfoURL: String? = nil, canExtendSession: Bool = false,
                secondsRemaining: Double? = nil, bytesRemaining: Double? = nil) {
        self.captive = captive
        self.userPortalURL = userPortalURL
        self.venueInfoURL = venueInfoURL
        self.canExtendSession = canExtendSession
        self.secondsRemaining = secondsRemaining
        self.bytesRemaining = bytesRemaining
    }
}

/// The RFC 8908 Captive Portal API client, validating as the RFC and Android do: HTTPS only
/// (plain HTTP only when allowed, for local testing), status 200 without redirects, the media
/// type `application/captive+json`, at most 4096 bytes, and a boolean `captive`.
///
/// The API URI is the network's (DHCPv4 option 114, DHCPv6 option 103, RA option 37, or the
/// configuration), so its host needs no allowlist entry; the request is bound to the network
/// like every other.
public enum CaptivePortalAPI {
    /// The API URI that means the network has no captive portal (RFC 8910, section 2).
    public static let unrestricted = "urn:ietf:params:capport:unrestricted"
    public static let mediaType = "application/captive+json"
    public static let maximumSize = 4096

    /// The session's status at `uri`; nil when `uri` is the unrestricted URN. Failures carry
    /// `HTTPFailure`'s prefixes: `not_allowed` for plain HTTP, `too_large` beyond 4096 bytes,
    /// `protocol` for any answer the RFC does not allow.
    public static func fetch(_ uri: String, binding: NetworkBinding, allowsPlainHTTP: Bool = false,
                             timeout: Duration = .seconds(10), deadline: ContinuousClock.Instant? = nil,
                             isCancelled: @escaping () -> Bool = { false }) throws(HTTPFailure) -> CaptivePortalStatus? {
        if uri == unrestricted { return nil }
        let target = URLReference(uri)
        switch target.scheme {
        case "https": break
        case "http" where allowsPlainHTTP: break
        case "http": throw HTTPFailure(.notAllowed, "\(uri): the Captive Portal API must be HTTPS (plain HTTP only when allowed for local testing)")
        default: throw HTTPFailure(.notAllowed, "\(uri): the Captive Portal API URI must be an https:// URL or \(unrestricted)")
        }
        guard let parts = target.hostParts, case .success(let host) = HostPattern.parse(parts.host) else {
            throw HTTPFailure(.protocol, "\(uri) has no usable host")
        }
        let client = BoundHTTPClient(binding: binding, allowedHosts: [host])
        let request = HTTPRequest(url: uri, headers: [("Accept", mediaType)], timeout: timeout, followRedirects: false,
                                  maxBody: maximumSize)
        let response = try client.perform(request, deadline: deadline, isCancelled: isCancelled)
        guard response.status == 200 else {
            throw HTTPFailure(.protocol, "the Captive Portal API answered status \(response.status), not 200")
        }
        return try status(body: response.body, contentType: response.header("content-type"),
                          allowsPlainHTTP: allowsPlainHTTP)
    }

    /// The status in an API response's body, checked against RFC 8908. A portal or venue URL
    /// that is not HTTPS (unless plain HTTP is allowed) is left out, as a client must not use it.
    public static func status(body: [UInt8], contentType: String?, allowsPlainHTTP: Bool = false) throws(HTTPFailure) -> CaptivePortalStatus {
        let type = contentType?.split(separator: ";").first?.trimmingWhitespace().lowercased()
        guard type == mediaType else {
            throw HTTPFailure(.protocol, "the Captive Portal API answered \(contentType ?? "no media type"), not \(mediaType)")
        }
        guard body.count <= maximumSize else {
            throw HTTPFailure(.tooLarge, "the Captive Portal API answered more than \(maximumSize) bytes")
        }
        let document: JSONValue
        do throws(JSONValue.ParseError) {
            document = try JSONValue.parse(body, maximumDepth: 8)
        } catch {
            throw HTTPFailure(.protocol, "the Captive Portal API answered malformed JSON: \(error)")
        }
        guard case .object = document else { throw HTTPFailure(.protocol, "the Captive Portal API answered JSON that is not an object") }
        guard case .boolean(let captive) = document["captive"] else {
            throw HTTPFailure(.protocol, "the Captive Portal API answered no boolean \"captive\"")
        }
        func url(_ name: String) -> String? {
            guard case .string(let bytes) = document[name] else { return nil }
            let text = String(decoding: bytes, as: UTF8.self)
            let scheme = URLReference(text).scheme
            return scheme == "https" || scheme == "http" && allowsPlainHTTP ? text : nil
        }
        func amount(_ name: String) -> Double? {
            switch document[name] {
            case .integer(let value) where value >= 0: Double(value)
            case .number(let value) where value >= 0: value
            default: nil
            }
        }
        var canExtend = false
        if case .boolean(let flag) = document["can-extend-session"] { canExtend = flag }
        return CaptivePortalStatus(captive: captive, userPortalURL: url("user-portal-url"), venueInfoURL: url("venue-info-url"),
                                   canExtendSession: canExtend, secondsRemaining: amount("seconds-remaining"),
                                   bytesRemaining: amount("bytes-remaining"))
    }
}
