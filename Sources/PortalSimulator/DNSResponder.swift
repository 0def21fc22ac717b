import NIOCore
import NIOPosix

/// A captive portal's DNS hijack: a UDP DNS server that answers every A query, for any name,
/// with one IPv4 address, and every other query with an empty NOERROR answer.
public final class DNSResponder: Sendable {
    /// The UDP port it answers on.
    public let port: Int
    /// The address every A query gets.
    public let answer: String
    private let channel: any Channel

    private init(port: Int, answer: String, channel: any Channel) {
        self.port = port
        self.answer = answer
        self.channel = channel
    }

    /// Starts answering on `host`:`port` (port 0: any free port).
    /// - Parameter answer: The address A queries get; by default `host` when it is an IPv4
    ///   address other than 0.0.0.0, otherwise 127.0.0.1.
    /// - Throws: `SimulatorError.notAnIPv4Address` for a bad `answer`, or the bind's error.
    public static func start(host: String = "127.0.0.1", port: Int = 0, answer: String? = nil) async throws -> DNSResponder {
        let answer = answer ?? (DNSMessage.ipv4Bytes(host) != nil && host != "0.0.0.0" ? host : "127.0.0.1")
        guard let address = DNSMessage.ipv4Bytes(answer) else { throw SimulatorError.notAnIPv4Address(answer) }
        let channel = try await DatagramBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .channelOption(.socketOption(.so_reuseaddr), value: 1)
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(DNSQueryHandler(answer: address))
                }
            }
            .bind(host: host, port: port).get()
        return DNSResponder(port: channel.localAddress?.port ?? port, answer: answer, channel: channel)
    }

    /// Stops answering; stopping twice is harmless.
    public func stop() async {
        try? await channel.close()
    }
}

private final class DNSQueryHandler: ChannelInboundHandler {
    typealias InboundIn = AddressedEnvelope<ByteBuffer>
    typealias OutboundOut = AddressedEnvelope<ByteBuffer>

    private let answer: [UInt8]

    init(answer: [UInt8]) {
        self.answer = answer
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let query = unwrapInboundIn(data)
        guard let reply = DNSMessage.reply(to: Array(query.data.readableBytesView), answer: answer) else { return }
        let envelope = AddressedEnvelope(remoteAddress: query.remoteAddress, data: ByteBuffer(bytes: reply))
        context.writeAndFlush(wrapOutboundOut(envelope), promise: nil)
    }
}

/// The little of RFC 1035 the hijack needs.
enum DNSMessage {
    static let typeA: UInt16 = 1
    static let classIN: UInt16 = 1
    /// Short, so that a device forgets the hijacked answers soon after logging in.
    static let answerTTL: UInt32 = 5

    /// The answer to `query`: the question echoed, and for an A query of class IN one A
    /// record with `answer`. Nil for anything that is not a standard query with one question,
    /// which is dropped as a real resolver would drop garbage.
    static func reply(to query: [UInt8], answer: [UInt8]) -> [UInt8]? {
        guard query.count >= 12, query[2] & 0xF8 == 0,  // QR = 0 (a query), OPCODE = 0 (QUERY)
            query[4] == 0, query[5] == 1  // QDCOUNT = 1
        else { return nil }
        var end = 12
        while true {  // QNAME: labels up to the root; compression has no place in a question
            guard end < query.count, query[end] & 0xC0 == 0 else { return nil }
            let length = Int(query[end])
            end += 1 + length
            if length == 0 { break }
        }
        guard end + 4 <= query.count, end - 12 <= 255 else { return nil }
        let type = UInt16(query[end]) << 8 | UInt16(query[end + 1])
        let queryClass = UInt16(query[end + 2]) << 8 | UInt16(query[end + 3])
        let answers = type == typeA && queryClass == classIN
        var reply = Array(query[0..<2])  // ID
        reply += [0x84 | query[2] & 0x01, 0x80]  // QR, AA, RD as asked; RA; NOERROR
        reply += [0, 1, 0, answers ? 1 : 0, 0, 0, 0, 0]  // one question, one answer or none
        reply += query[12..<(end + 4)]
        if answers {
            reply += [0xC0, 12]  // the name: a pointer to the question's
            reply += [0, UInt8(typeA), 0, UInt8(classIN)]
            reply += (0..<4).map { UInt8(truncatingIfNeeded: answerTTL >> (24 - 8 * $0)) }
            reply += [0, 4] + answer
        }
        return reply
    }

    /// The four bytes of a dotted-quad IPv4 address.
    static func ipv4Bytes(_ text: String) -> [UInt8]? {
        let parts = text.split(separator: ".", omittingEmptySubsequences: false)
        let bytes = parts.compactMap { part in
            (1...3).contains(part.count) && part.allSatisfy({ ("0"..."9").contains($0) }) ? UInt8(part) : nil
        }
        return parts.count == 4 && bytes.count == 4 ? bytes : nil
    }
}
