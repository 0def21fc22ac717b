#if canImport(Glibc)
import Glibc
#endif
import FoundationEssentials
import HotspotCore
import LuaSandbox
import PortalRecording
import ScriptContract

/// Where the exchanges of a helper's failed attempt at a venue are written, as HAR files a
/// maintainer replays with `simulate --har` (`run --record-failures`): every request the
/// helper's commands on the network made since it joined (probes, pages, posts, each redirect
/// hop), with the secrets file's values, the person's answers, cookies, tokens, credentials
/// and email addresses taken out.
public struct FailureRecordings: Sendable, Equatable {
    public var directory: String
    /// The latest files kept: older ones are removed as a new one is written.
    public var keep: Int

    /// The largest file written: bodies are left out, the largest first, until it fits (a
    /// portal login is a few hundred KiB; `har import` reads up to 32 MiB).
    public static let sizeLimit = 8 << 20
    public static let defaultKeep = 20

    public init(directory: String, keep: Int = defaultKeep) {
        self.directory = directory
        self.keep = keep
    }

    /// Whether a command's result is a failure at the venue worth a recording: the commands
    /// that reach the portal, failing.
    static func records(_ command: HotspotCommand, _ result: CommandResult) -> Bool {
        [.authenticate, .presentUI, .maintain].contains(command) && [.failure, .temporaryFailure].contains(result)
    }

    /// Writes the exchanges the `exchanges` entry answered, with `hidden` and what
    /// `Redaction(attempt:)` finds in them taken out; the file's path and its entries, nil
    /// when the helper's session made no request.
    func write(_ answer: LuaValue, helper: String, network: String, command: HotspotCommand,
               hidden: Secrets) throws(RecordingProblem) -> (path: String, count: Int)? {
        let recorded = Self.exchanges(answer)
        guard let first = recorded.first else { return nil }
        let redaction = Redaction(attempt: recorded)
        let hiding = hidden.hiding(redaction.values.map(\.value))
        var exchanges = recorded.compactMap { Self.redacted($0, by: hiding) }
        let comment = "\(helper) failed \(command.rawValue) on \(network); secrets and personal data taken out by hotspot-helper"
        var bytes = HARFile.encode(exchanges, creator: ("hotspot-helper", "1"), comment: comment)
        while bytes.count > Self.sizeLimit, let largest = exchanges.indices.max(by: { exchanges[$0].responseBody.count < exchanges[$1].responseBody.count }),
              !exchanges[largest].responseBody.isEmpty {
            exchanges[largest] = Self.withoutBody(exchanges[largest], because: "body left out: the recording is limited to \(Self.sizeLimit) bytes")
            bytes = HARFile.encode(exchanges, creator: ("hotspot-helper", "1"), comment: comment)
        }
        // Every value was replaced where it stood; one found now spans two strings or the
        // document's own words, and the file is not written rather than carry it.
        let text = String(decoding: bytes, as: UTF8.self)
        guard hiding.redact(text) == text else {
            throw RecordingProblem("a secret or personal value would remain in the recording; nothing was written")
        }
        if mkdir(directory, 0o700) != 0, errno != EEXIST {
            throw RecordingProblem("cannot make \(directory): \(String(cString: strerror(errno)))")
        }
        let stamp = HARFile.timestamp(first.started).filter { $0 != ":" && $0 != "-" }
        let path = directory + "/" + [stamp, Self.fileSafe(network), Self.fileSafe(helper), command.rawValue].joined(separator: "-") + ".har"
        do {
            try StateDirectory.writeAtomically(Data(bytes), to: path)
        } catch {
            throw RecordingProblem(error.description)
        }
        removeAllButTheLatest()
        return (path, exchanges.count)
    }

    /// Removes the oldest recordings beyond `keep`: their names start with when they began.
    private func removeAllButTheLatest() {
        guard let names = try? FileManager.default.contentsOfDirectory(atPath: directory) else { return }
        for name in names.filter({ $0.hasSuffix(".har") }).sorted().dropLast(keep) { unlink(directory + "/" + name) }
    }

    static func fileSafe(_ text: String) -> String {
        String(text.unicodeScalars.prefix(40).map { $0.isASCII && ($0.properties.isAlphabetic || ("0"..."9").contains($0) || "_.-".unicodeScalars.contains($0))
            ? Character($0) : "_" })
    }

    /// The exchanges as the `exchanges` entry hands them over (`ScriptNames.ExchangeKey`).
    static func exchanges(_ answer: LuaValue) -> [RecordedExchange] {
        typealias Key = ScriptNames.ExchangeKey
        func headers(_ value: LuaValue) -> [(name: String, value: String)] {
            (value.tableValue?.array ?? []).compactMap { pair in
                guard let parts = pair.tableValue?.array, parts.count == 2, let name = parts[0].stringValue, let value = parts[1].stringValue
                else { return nil }
                return (name, value)
            }
        }
        return (answer.tableValue?.array ?? []).enumerated().compactMap { index, item -> RecordedExchange? in
            guard let table = item.tableValue, let text = table[Key.url].stringValue, let url = RecordedURL(text) else { return nil }
            let requestHeaders = headers(table[Key.requestHeaders]), responseHeaders = headers(table[Key.responseHeaders])
            func contentType(_ list: [(name: String, value: String)]) -> String? { list.first { $0.name.lowercased() == "content-type" }?.value }
            return RecordedExchange(
                entry: index, started: table[Key.started].numberValue ?? 0, method: table[Key.method].stringValue ?? "GET", url: url,
                requestHeaders: requestHeaders, requestBody: table[Key.requestBody].bytesValue.map { String(decoding: $0, as: UTF8.self) },
                requestContentType: contentType(requestHeaders), status: Int(table[Key.status].integerValue ?? 0),
                responseHeaders: responseHeaders, responseBody: table[Key.responseBody].bytesValue ?? [],
                responseContentType: contentType(responseHeaders) ?? "", milliseconds: table[Key.milliseconds].numberValue ?? 0,
                comment: table[Key.failure].stringValue.map { "no response: \($0)" })
        }
    }

    /// The exchange with `hiding`'s values replaced in every text it has; a body that is not
    /// text (an image) is left out, as what it holds cannot be looked through.
    static func redacted(_ exchange: RecordedExchange, by hiding: Secrets) -> RecordedExchange? {
        guard let url = RecordedURL(hiding.redact(exchange.url.description)) else { return nil }
        let headers = { (list: [(name: String, value: String)]) in list.map { ($0.name, hiding.redact($0.value)) } }
        let text = String(validating: exchange.responseBody, as: UTF8.self)
        return RecordedExchange(
            entry: exchange.entry, started: exchange.started, method: exchange.method, url: url, requestHeaders: headers(exchange.requestHeaders),
            requestBody: exchange.requestBody.map(hiding.redact), requestContentType: exchange.requestContentType, status: exchange.status,
            responseHeaders: headers(exchange.responseHeaders), responseBody: text.map { Array(hiding.redact($0).utf8) } ?? [],
            responseContentType: exchange.responseContentType, milliseconds: exchange.milliseconds,
            comment: text == nil && !exchange.responseBody.isEmpty ? "body left out: not text" : exchange.comment.map(hiding.redact))
    }

    static func withoutBody(_ exchange: RecordedExchange, because reason: String) -> RecordedExchange {
        RecordedExchange(
            entry: exchange.entry, started: exchange.started, method: exchange.method, url: exchange.url, requestHeaders: exchange.requestHeaders,
            requestBody: exchange.requestBody, requestContentType: exchange.requestContentType, status: exchange.status,
            responseHeaders: exchange.responseHeaders, responseBody: [], responseContentType: exchange.responseContentType,
            milliseconds: exchange.milliseconds, comment: reason)
    }
}

public struct RecordingProblem: Error, Sendable, CustomStringConvertible {
    public let description: String
    init(_ description: String) { self.description = description }
}
