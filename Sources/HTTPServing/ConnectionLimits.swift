import Locking
import NIOCore

/// What keeps clients that connect and stall (half-sent requests, idle connections) from
/// locking everyone else out of a server: a connection has `idleTimeout` to send a request's
/// head and between requests; at most `maximumConnections` are open, `maximumPerPeer` from
/// one address; and a connection past either cap makes room by closing the oldest one (of
/// that peer, or of all) that has not sent a request's head yet. A person's browser sends
/// its request at once, so stalled clients, however many, only ever close one another.
public struct ConnectionLimits: Sendable {
    public var idleTimeout: Duration
    public var maximumConnections: Int
    public var maximumPerPeer: Int

    public init(idleTimeout: Duration = .seconds(10), maximumConnections: Int = 128, maximumPerPeer: Int = 64) {
        self.idleTimeout = idleTimeout
        self.maximumConnections = maximumConnections
        self.maximumPerPeer = maximumPerPeer
    }
}

/// The connections open under one `ConnectionLimits`, oldest first.
final class ConnectionLedger: Sendable {
    private struct Open {
        let channel: any Channel
        let peer: String
        var requested = false
    }

    let limits: ConnectionLimits
    private let open = PlainLock<[Open]>([])

    init(_ limits: ConnectionLimits) { self.limits = limits }

    /// Counts a new connection; closes the stalled one it takes the place of, or the new
    /// one when every other has sent its request.
    func opened(_ channel: any Channel) {
        let peer = channel.remoteAddress?.ipAddress ?? ""
        let closing: (any Channel)? = open.withLock { open in
            let fromPeer = open.filter { $0.peer == peer }
            let full = fromPeer.count >= limits.maximumPerPeer ? fromPeer
                : open.count >= limits.maximumConnections ? open : nil
            if let full {
                guard let stalled = full.first(where: { !$0.requested }) else { return channel }
                open.removeAll { $0.channel === stalled.channel }
                open.append(Open(channel: channel, peer: peer))
                return stalled.channel
            }
            open.append(Open(channel: channel, peer: peer))
            return nil
        }
        closing?.close(promise: nil)
    }

    func requested(_ channel: any Channel) {
        open.withLock { open in
            if let index = open.firstIndex(where: { $0.channel === channel }) { open[index].requested = true }
        }
    }

    func closed(_ channel: any Channel) {
        open.withLock { open in open.removeAll { $0.channel === channel } }
    }
}

/// Tells the ledger of its connection: opened, its first request part (a head), closed.
/// Placed after HTTP decoding, so the first part read is a whole request head.
final class ConnectionLimitHandler: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = Any
    private let ledger: ConnectionLedger
    private var counted = false
    private var requested = false

    init(_ ledger: ConnectionLedger) { self.ledger = ledger }

    func handlerAdded(context: ChannelHandlerContext) {
        if context.channel.isActive { count(context.channel) }
    }

    func channelActive(context: ChannelHandlerContext) {
        count(context.channel)
        context.fireChannelActive()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        if !requested {
            requested = true
            ledger.requested(context.channel)
        }
        context.fireChannelRead(data)
    }

    func channelInactive(context: ChannelHandlerContext) {
        ledger.closed(context.channel)
        context.fireChannelInactive()
    }

    private func count(_ channel: any Channel) {
        guard !counted else { return }
        counted = true
        ledger.opened(channel)
    }
}
