import JSON
import LinuxFiles

/// Why a HAR file could not be imported: what is wrong and where, so the person can look.
public struct RecordingError: Error, Sendable, CustomStringConvertible, Equatable {
    /// The file, or the file and the entry (`login.har: entry 3 (POST http://…/login)`).
    public let location: String
    public let problem: String

    public var description: String { "\(location): \(problem)" }
}

/// One request and its response, as the HAR recorded them (HAR 1.2's `entries[i]`).
public struct RecordedExchange: Sendable {
    /// The entry's position in the file, from 0.
    public let entry: Int
    /// When the request started, in seconds since 1970 (`startedDateTime`).
    public let started: Double
    public let method: String
    public let url: RecordedURL
    public let requestHeaders: [(name: String, value: String)]
    /// The request's body (`postData.text`), as sent.
    public let requestBody: String?
    public let requestContentType: String?
    /// 0 when the request got no response (Chromium's blocked or cancelled requests).
    public let status: Int
    public let responseHeaders: [(name: String, value: String)]
    /// The response's body, decoded from base64 when the HAR stored it so; empty when the
    /// browser did not keep it.
    public let responseBody: [UInt8]
    public let responseContentType: String
    /// How long the exchange took, 0 when unknown.
    public let milliseconds: Double
    /// What the recording says of it (why no response came), written as the entry's `comment`.
    public let comment: String?

    public init(entry: Int, started: Double, method: String, url: RecordedURL, requestHeaders: [(name: String, value: String)],
                requestBody: String?, requestContentType: String?, status: Int, responseHeaders: [(name: String, value: String)],
                responseBody: [UInt8], responseContentType: String, milliseconds: Double = 0, comment: String? = nil) {
        self.entry = entry
        self.started = started
        self.method = method
        self.url = url
        self.requestHeaders = requestHeaders
        self.requestBody = requestBody
        self.requestContentType = requestContentType
        self.status = status
        self.responseHeaders = responseHeaders
        self.responseBody = responseBody
        self.responseContentType = responseContentType
        self.milliseconds = milliseconds
        self.comment = comment
    }

    /// The first request header of that name (case-insensitive).
    public func requestHeader(_ name: String) -> String? {
        requestHeaders.first { $0.name.lowercased() == name.lowercased() }?.value
    }

    /// The first response header of that name (case-insensitive).
    public func responseHeader(_ name: String) -> String? {
        responseHeaders.first { $0.name.lowercased() == name.lowercased() }?.value
    }

    /// Every `Set-Cookie` of the response.
    public var setCookies: [String] {
        responseHeaders.filter { $0.name.lowercased() == "set-cookie" }.map(\.value)
    }

    public var isRedirect: Bool { [301, 302, 303, 307, 308].contains(status) }
    public var isHTML: Bool { responseContentType.lowercased().contains("html") }
    public var isJSON: Bool { responseContentType.lowercased().contains("json") }
    public var responseText: String { String(decoding: responseBody, as: UTF8.self) }

    /// How an entry is named in messages: its number from 1, method and URL without its query.
    public var label: String { "entry \(entry + 1) (\(method) \(url.withoutQuery))" }
}

/// The parts of a recorded http(s) URL.
public struct RecordedURL: Sendable, Hashable, CustomStringConvertible {
    public let scheme: String
    public let host: String
    /// nil for the scheme's default.
    public let port: Int?
    /// From `/`, without the query.
    public let path: String
    /// After `?`, nil for none.
    public let query: String?

    public init?(_ text: String) {
        guard let schemeEnd = text.firstRange(of: "://") else { return nil }
        let scheme = text[..<schemeEnd.lowerBound].lowercased()
        guard scheme == "http" || scheme == "https" else { return nil }
        var rest = text[schemeEnd.upperBound...]
        if let hash = rest.firstIndex(of: "#") { rest = rest[..<hash] }
        let authorityEnd = rest.firstIndex { $0 == "/" || $0 == "?" } ?? rest.endIndex
        var authority = rest[..<authorityEnd]
        if let at = authority.lastIndex(of: "@") { authority = authority[authority.index(after: at)...] }
        var host = String(authority), port: Int?
        if let colon = authority.lastIndex(of: ":"), !authority[colon...].contains("]") {
            host = String(authority[..<colon])
            guard let number = Int(authority[authority.index(after: colon)...]), (1...65535).contains(number) else { return nil }
            port = number
        }
        guard !host.isEmpty else { return nil }
        let pathAndQuery = rest[authorityEnd...]
        let question = pathAndQuery.firstIndex(of: "?")
        let path = String(pathAndQuery[..<(question ?? pathAndQuery.endIndex)])
        self.scheme = scheme
        self.host = host.lowercased()
        self.port = port == (scheme == "https" ? 443 : 80) ? nil : port
        self.path = path.isEmpty ? "/" : path
        self.query = question.map { String(pathAndQuery[pathAndQuery.index(after: $0)...]) }
    }

    public var authority: String { port.map { "\(host):\($0)" } ?? host }
    public var withoutQuery: String { "\(scheme)://\(authority)\(path)" }
    public var pathAndQuery: String { query.map { "\(path)?\($0)" } ?? path }
    public var description: String { "\(withoutQuery)\(query.map { "?\($0)" } ?? "")" }

    /// Whether the host is an IPv4 or IPv6 address rather than a name.
    public var hostIsAddress: Bool {
        host.hasPrefix("[") || host.split(separator: ".").count == 4 && host.allSatisfy { $0.isNumber || $0 == "." }
    }

    /// `reference` (a Location header, an action) resolved against this URL.
    public func resolving(_ reference: String) -> RecordedURL? {
        if reference.contains("://") { return RecordedURL(reference) }
        let base = "\(scheme)://\(authority)"
        if reference.hasPrefix("//") { return RecordedURL("\(scheme):\(reference)") }
        if reference.hasPrefix("/") { return RecordedURL(base + reference) }
        if reference.hasPrefix("?") { return RecordedURL(base + path + reference) }
        if reference.isEmpty { return self }
        let directory = path[...(path.lastIndex(of: "/") ?? path.startIndex)]
        return RecordedURL(base + directory + reference)
    }
}

/// Reads HAR 1.2 files as Chromium, Firefox and mitmproxy write them.
public enum HARFile {
    /// The largest HAR the import reads: a portal login is a few hundred KiB; a file many
    /// times that recorded a whole browsing session, and parsing it would cost its size
    /// again in memory.
    public static let sizeLimit = 32 * BoundedFile.mebibyte
    /// The largest body kept of one response, decoded: a portal's page is small; a video
    /// the browser fetched meanwhile is not needed to replay a login.
    public static let bodyLimit = 1 * BoundedFile.mebibyte

    /// The exchanges of the HAR at `path`, in the order their requests started (a HAR's
    /// entries need not be in order: merged or hand-edited files are not).
    public static func read(_ path: String) throws(RecordingError) -> [RecordedExchange] {
        let bytes: [UInt8]
        do {
            bytes = try BoundedFile.read(path, limit: sizeLimit)
        } catch {
            throw RecordingError(location: path, problem: "\(error) (a HAR of one portal login is a few hundred KiB; record only the login)")
        }
        return try parse(bytes, name: path)
    }

    public static func parse(_ bytes: [UInt8], name: String) throws(RecordingError) -> [RecordedExchange] {
        let document: JSONValue
        do {
            document = try JSONValue.parse(bytes, maximumDepth: 64)
        } catch {
            throw RecordingError(location: "\(name):\(lineAndColumn(of: error.byte, in: bytes))", problem: "not JSON: \(error.message)")
        }
        guard let log = document["log"], case .object = log else {
            throw RecordingError(location: name, problem: "not a HAR: no \"log\" object at the top")
        }
        guard case .array(let entries)? = log["entries"] else {
            throw RecordingError(location: name, problem: "not a HAR: \"log\" has no \"entries\" list")
        }
        var exchanges: [RecordedExchange] = []
        exchanges.reserveCapacity(entries.count)
        for (index, entry) in entries.enumerated() {
            exchanges.append(try exchange(entry, index: index, file: name))
        }
        // Stable: entries started in the same millisecond keep the file's order.
        return exchanges.enumerated().sorted { ($0.element.started, $0.offset) < ($1.element.started, $1.offset) }.map(\.element)
    }

    private static func exchange(_ entry: JSONValue, index: Int, file: String) throws(RecordingError) -> RecordedExchange {
        let location = "\(file): entry \(index + 1)"
        func fail(_ problem: String) -> RecordingError { RecordingError(location: location, problem: problem) }
        guard let request = entry["request"], let response = entry["response"] else {
            throw fail("has no \"request\" or no \"response\"")
        }
        guard let method = request["method"]?.text, !method.isEmpty else { throw fail("request.method is missing") }
        guard let urlText = request["url"]?.text else { throw fail("request.url is missing") }
        guard let url = RecordedURL(urlText) else { throw fail("request.url \"\(urlText.prefix(200))\" is not an http(s) URL") }
        guard let startedText = entry["startedDateTime"]?.text else { throw fail("startedDateTime is missing") }
        guard let started = ISODate.seconds(startedText) else {
            throw fail("startedDateTime \"\(startedText.prefix(64))\" is not an ISO 8601 date and time")
        }
        let status: Int
        switch response["status"] {
        case .integer(let value)?: status = Int(clamping: value)
        case .number(let value)? where value.isFinite && value >= 0 && value < 1000: status = Int(value)
        default: throw fail("response.status is missing or not a number")
        }
        let content = response["content"]
        var body: [UInt8] = []
        if let text = content?["text"]?.bytes {
            if content?["encoding"]?.text == "base64" {
                guard let decoded = Base64.decode(text, limit: bodyLimit) else {
                    throw fail("response.content.text is marked base64 but is not valid base64")
                }
                body = decoded
            } else {
                body = Array(text.prefix(bodyLimit))
            }
        }
        let postData = request["postData"]
        return RecordedExchange(
            entry: index, started: started, method: method.uppercased(), url: url,
            requestHeaders: headers(request["headers"]), requestBody: postData?["text"]?.text,
            requestContentType: postData?["mimeType"]?.text, status: status, responseHeaders: headers(response["headers"]),
            responseBody: body, responseContentType: content?["mimeType"]?.text ?? "")
    }

    /// `exchanges` as a HAR 1.2 document that `read` (and a browser's HAR viewer) reads back;
    /// `creator` names what wrote it, `comment` what it is.
    public static func encode(_ exchanges: [RecordedExchange], creator: (name: String, version: String), comment: String) -> [UInt8] {
        func text(_ value: String) -> JSONValue { .string(Array(value.utf8)) }
        func object(_ members: [(String, JSONValue)]) -> JSONValue { JSONValue(members: members.map { (name: $0.0, value: $0.1) }) }
        func headers(_ list: [(name: String, value: String)]) -> JSONValue {
            .array(list.map { object([("name", text($0.name)), ("value", text($0.value))]) })
        }
        let entries = exchanges.map { exchange -> JSONValue in
            var request: [(String, JSONValue)] = [
                ("method", text(exchange.method)), ("url", text(exchange.url.description)), ("httpVersion", text("HTTP/1.1")),
                ("cookies", .array([])), ("headers", headers(exchange.requestHeaders)),
                ("queryString", .array(FormFields.decode(exchange.url.query ?? "").map { object([("name", text($0.0)), ("value", text($0.1))]) })),
                ("headersSize", .integer(-1)), ("bodySize", .integer(Int64(exchange.requestBody?.utf8.count ?? 0))),
            ]
            if let body = exchange.requestBody {
                request.append(("postData", object([("mimeType", text(exchange.requestContentType ?? "")), ("text", text(body))])))
            }
            var content: [(String, JSONValue)] = [("size", .integer(Int64(exchange.responseBody.count))),
                                                  ("mimeType", text(exchange.responseContentType))]
            if String(validating: exchange.responseBody, as: UTF8.self) != nil {
                content.append(("text", .string(exchange.responseBody)))
            } else {
                content += [("text", .string(Base64.encode(exchange.responseBody))), ("encoding", text("base64"))]
            }
            let location = exchange.isRedirect ? exchange.responseHeader("location") ?? "" : ""
            var entry: [(String, JSONValue)] = [
                ("startedDateTime", text(ISODate.text(exchange.started))), ("time", .number(exchange.milliseconds)),
                ("request", object(request)),
                ("response", object([
                    ("status", .integer(Int64(exchange.status))), ("statusText", text("")), ("httpVersion", text("HTTP/1.1")),
                    ("cookies", .array([])), ("headers", headers(exchange.responseHeaders)), ("content", object(content)),
                    ("redirectURL", text(location)), ("headersSize", .integer(-1)), ("bodySize", .integer(Int64(exchange.responseBody.count))),
                ])),
                ("cache", object([])),
                ("timings", object([("send", .integer(0)), ("wait", .number(exchange.milliseconds)), ("receive", .integer(0))])),
            ]
            if let comment = exchange.comment { entry.append(("comment", text(comment))) }
            return object(entry)
        }
        return object([("log", object([
            ("version", text("1.2")), ("creator", object([("name", text(creator.name)), ("version", text(creator.version))])),
            ("pages", .array([])), ("entries", .array(entries)), ("comment", text(comment)),
        ]))]).serialized()
    }

    /// `seconds` since 1970 as HAR writes its times (`2026-11-28T12:49:43.123Z`).
    public static func timestamp(_ seconds: Double) -> String { ISODate.text(seconds) }

    private static func headers(_ list: JSONValue?) -> [(name: String, value: String)] {
        guard case .array(let items)? = list else { return [] }
        return items.compactMap { item in
            guard let name = item["name"]?.text, let value = item["value"]?.text else { return nil }
            return (name, value)
        }
    }

    static func lineAndColumn(of byte: Int, in bytes: [UInt8]) -> String {
        var line = 1, column = 1
        for value in bytes.prefix(max(0, byte - 1)) {
            if value == UInt8(ascii: "\n") { line += 1; column = 1 } else { column += 1 }
        }
        return "\(line):\(column)"
    }
}

extension JSONValue {
    var bytes: [UInt8]? {
        guard case .string(let value) = self else { return nil }
        return value
    }

    var text: String? { bytes.map { String(decoding: $0, as: UTF8.self) } }
}

/// RFC 4648 base64, strict: anything but the alphabet, padding and line breaks is an error.
enum Base64 {
    static func encode(_ bytes: [UInt8]) -> [UInt8] {
        let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/".utf8)
        var output: [UInt8] = []
        output.reserveCapacity((bytes.count + 2) / 3 * 4)
        for start in stride(from: 0, to: bytes.count, by: 3) {
            let chunk = bytes[start..<min(start + 3, bytes.count)]
            let value = chunk.enumerated().reduce(UInt32(0)) { $0 | UInt32($1.element) << (16 - 8 * UInt32($1.offset)) }
            for index in 0..<4 {
                output.append(index <= chunk.count ? alphabet[Int(value >> (18 - 6 * UInt32(index)) & 63)] : UInt8(ascii: "="))
            }
        }
        return output
    }

    static func decode(_ text: [UInt8], limit: Int) -> [UInt8]? {
        var output: [UInt8] = []
        output.reserveCapacity(min(limit, text.count / 4 * 3))
        var buffer: UInt32 = 0, bits = 0, padding = 0
        for byte in text {
            let value: UInt32
            switch byte {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"): value = UInt32(byte - UInt8(ascii: "A"))
            case UInt8(ascii: "a")...UInt8(ascii: "z"): value = UInt32(byte - UInt8(ascii: "a") + 26)
            case UInt8(ascii: "0")...UInt8(ascii: "9"): value = UInt32(byte - UInt8(ascii: "0") + 52)
            case UInt8(ascii: "+"), UInt8(ascii: "-"): value = 62
            case UInt8(ascii: "/"), UInt8(ascii: "_"): value = 63
            case UInt8(ascii: "="): padding += 1; continue
            case UInt8(ascii: "\n"), UInt8(ascii: "\r"): continue
            default: return nil
            }
            guard padding == 0 else { return nil }
            buffer = buffer << 6 | value
            bits += 6
            if bits >= 8 {
                bits -= 8
                if output.count < limit { output.append(UInt8(truncatingIfNeeded: buffer >> UInt32(bits))) }
            }
        }
        return padding <= 2 && bits < 6 ? output : nil
    }
}

/// ISO 8601 date-times as HAR writes them: `2026-11-28T12:49:43.123Z`, `…+01:00`.
enum ISODate {
    /// `seconds` since 1970 in UTC, to the millisecond (Howard Hinnant's civil_from_days).
    static func text(_ seconds: Double) -> String {
        let milliseconds = Int((seconds * 1000).rounded(.down))
        let days = milliseconds >= 0 ? milliseconds / 86_400_000 : (milliseconds - 86_399_999) / 86_400_000
        let inDay = milliseconds - days * 86_400_000
        let z = days + 719468
        let era = (z >= 0 ? z : z - 146096) / 146097
        let dayOfEra = z - era * 146097
        let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36524 - dayOfEra / 146096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let monthIndex = (5 * dayOfYear + 2) / 153
        let day = dayOfYear - (153 * monthIndex + 2) / 5 + 1
        let month = monthIndex < 10 ? monthIndex + 3 : monthIndex - 9
        let year = yearOfEra + era * 400 + (month <= 2 ? 1 : 0)
        func padded(_ value: Int, _ width: Int) -> String {
            let digits = String(value)
            return String(repeating: "0", count: max(0, width - digits.count)) + digits
        }
        return "\(padded(year, 4))-\(padded(month, 2))-\(padded(day, 2))T\(padded(inDay / 3_600_000, 2)):"
            + "\(padded(inDay / 60_000 % 60, 2)):\(padded(inDay / 1000 % 60, 2)).\(padded(inDay % 1000, 3))Z"
    }

    static func seconds(_ text: String) -> Double? {
        let characters = Array(text.utf8)
        func number(_ range: Range<Int>) -> Int? {
            guard range.upperBound <= characters.count else { return nil }
            var value = 0
            for byte in characters[range] {
                guard (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) else { return nil }
                value = value * 10 + Int(byte - UInt8(ascii: "0"))
            }
            return value
        }
        guard characters.count >= 19, characters[4] == UInt8(ascii: "-"), characters[7] == UInt8(ascii: "-"),
            characters[10] == UInt8(ascii: "T") || characters[10] == UInt8(ascii: " "),
            let year = number(0..<4), let month = number(5..<7), let day = number(8..<10),
            let hour = number(11..<13), let minute = number(14..<16), let second = number(17..<19),
            (1...12).contains(month), (1...31).contains(day), hour < 24, minute < 60, second < 61
        else { return nil }
        var index = 19, fraction = 0.0
        if index < characters.count, characters[index] == UInt8(ascii: ".") {
            index += 1
            var scale = 0.1
            while index < characters.count, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(characters[index]) {
                fraction += Double(characters[index] - UInt8(ascii: "0")) * scale
                scale /= 10
                index += 1
            }
        }
        var offset = 0
        if index < characters.count {
            switch characters[index] {
            case UInt8(ascii: "Z"): index += 1
            case UInt8(ascii: "+"), UInt8(ascii: "-"):
                guard let hours = number(index + 1..<index + 3) else { return nil }
                let minutesStart = index + 3 < characters.count && characters[index + 3] == UInt8(ascii: ":") ? index + 4 : index + 3
                let minutes = number(minutesStart..<minutesStart + 2) ?? 0
                offset = (hours * 60 + minutes) * 60 * (characters[index] == UInt8(ascii: "-") ? -1 : 1)
                index = min(characters.count, minutesStart + 2)
            default: return nil
            }
        }
        guard index == characters.count else { return nil }
        // Days from 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's days_from_civil).
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yearOfEra = y - era * 400
        let dayOfYear = (153 * (month + (month > 2 ? -3 : 9)) + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        let days = era * 146097 + dayOfEra - 719468
        return Double(days * 86400 + hour * 3600 + minute * 60 + second - offset) + fraction
    }
}
