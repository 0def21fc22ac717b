/// One HTTP request as a script describes it.
public struct HTTPRequest: Sendable {
    public var method: String
    public var url: String
    /// In the order given; names as given.
    public var headers: [(name: String, value: String)]
    public var body: [UInt8]?
    /// The whole request, every redirect included, ends by the earlier of this and the
    /// client's deadline.
    public var timeout: Duration
    public var followRedirects: Bool
    public var maxRedirects: Int
    /// The largest body accepted, counted after decompression.
    public var maxBody: Int

    public init(method: String = "GET", url: String, headers: [(name: String, value: String)] = [],
                body: [UInt8]? = nil, timeout: Duration = .seconds(10), followRedirects: Bool = true,
                maxRedirects: Int = 10, maxBody: Int = 1_048_576) {
        self.method = method
        self.url = url
        self.headers = headers
        self.body = body
        self.timeout = timeout
        self.followRedirects = followRedirects
        self.maxRedirects = maxRedirects
        self.maxBody = maxBody
    }
}

public struct HTTPResponse: Sendable {
    public var status: Int
    /// Names in lower case, in the order received.
    public var headers: [(name: String, value: String)]
    public var body: [UInt8]
    /// The URL of the last hop.
    public var url: String
    /// Every redirect followed, in order: its status and the URL it pointed to.
    public var redirects: [(status: Int, url: String)]

    public func header(_ name: String) -> String? {
        headers.first { $0.name == name }?.value
    }
}

/// Why a request failed; the message starts with the kind's prefix, which scripts match.
public struct HTTPFailure: Error, Sendable, Equatable, CustomStringConvertible {
    public enum Kind: String, Sendable {
        case timeout, dns, connect, tls
        case tooLarge = "too_large"
        case notAllowed = "not_allowed"
        case redirectLoop = "redirect_loop"
        case `protocol`
        /// A TCP peer closed or reset the connection (`cmd:tcp`).
        case closed
    }

    public let kind: Kind
    public let detail: String

    public init(_ kind: Kind, _ detail: String) {
        self.kind = kind
        self.detail = detail
    }

    public var description: String { "\(kind.rawValue): \(detail)" }
}
