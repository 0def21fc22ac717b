#if canImport(Glibc)
import Glibc
#endif
import Locking

/// One request to one URL (a redirect hop is one) and what came back, as a client sent and
/// received it: what a recording of a helper's failed attempt is made of.
public struct HTTPExchange: Sendable {
    /// When the request started, in seconds since 1970.
    public var started: Double
    public var method: String
    public var url: String
    public var requestHeaders: [(name: String, value: String)]
    public var requestBody: [UInt8]?
    /// 0 when no response came; `failure` then says why.
    public var status: Int
    public var responseHeaders: [(name: String, value: String)]
    public var responseBody: [UInt8]
    public var milliseconds: Double
    public var failure: String?

    /// The response's `content-type`, empty without one.
    public var responseContentType: String { responseHeaders.first { $0.name == "content-type" }?.value ?? "" }

    /// The wall clock now, in seconds since 1970.
    static var now: Double {
        var spec = timespec()
        clock_gettime(CLOCK_REALTIME, &spec)
        return Double(spec.tv_sec) + Double(spec.tv_nsec) / 1e9
    }
}

/// The latest exchanges of one helper's session, kept only while a recording of failures is
/// asked for; bounded, the oldest going first, so a long session's maintains do not grow it.
public final class ExchangeLog: Sendable {
    /// The most a log holds; a portal login is a few dozen requests of a few KiB each.
    public static let byteLimit = 2 << 20
    public static let countLimit = 200
    /// The largest body kept of one request or response: a portal's page is small, and the
    /// import keeps no more than a MiB of one either.
    public static let bodyLimit = 256 << 10

    private let entries = PlainLock<(exchanges: [HTTPExchange], bytes: Int)>(([], 0))

    public init() {}

    public func append(_ exchange: HTTPExchange) {
        var exchange = exchange
        exchange.responseBody = Array(exchange.responseBody.prefix(Self.bodyLimit))
        exchange.requestBody = exchange.requestBody.map { Array($0.prefix(Self.bodyLimit)) }
        let size = Self.size(of: exchange)
        entries.withLock { log in
            log.exchanges.append(exchange)
            log.bytes += size
            while log.exchanges.count > Self.countLimit || log.bytes > Self.byteLimit, log.exchanges.count > 1 {
                log.bytes -= Self.size(of: log.exchanges.removeFirst())
            }
        }
    }

    /// Everything logged, which leaves the log empty.
    public func take() -> [HTTPExchange] {
        entries.withLock { log in
            defer { log = ([], 0) }
            return log.exchanges
        }
    }

    private static func size(of exchange: HTTPExchange) -> Int {
        exchange.url.utf8.count + exchange.responseBody.count + (exchange.requestBody?.count ?? 0)
            + (exchange.requestHeaders + exchange.responseHeaders).reduce(0) { $0 + $1.name.utf8.count + $1.value.utf8.count }
    }
}
