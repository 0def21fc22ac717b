#if canImport(Glibc)
import Glibc
#endif
public import LuaSandbox
public import HotspotNetwork
import ScriptContract

/// `wispr.parse(page)` and `wispr.login_form(message, username, password [, originating_server])`:
/// the WISPr smart-client messages gateways put in their pages.
///
/// A plain search finds the message's envelope, `<WISPAccessGatewayParam>`, in the page; what is
/// inside is read by libxml2's XML parser, which recovers broken XML, never matched with patterns.
public enum WISPrLibrary {
    static let maximumPageSize = 1 << 20
    static let maximumElements = 256
    static let defaultOriginatingServer = "http://www.apple.com"

    public static let module = HostModule.library(.wispr, functions: [
        ("parse", { (call: borrowing HostCall) throws -> [LuaValue] in
            let page = try call.bytes(0)
            guard page.count <= maximumPageSize else {
                throw HostError("\(call.functionName): the page is larger than \(maximumPageSize >> 20) MiB")
            }
            guard let (message, problem) = message(in: page) else { return [nil] }
            // Recovered XML is trusted as far as it still says what the message is.
            if let problem, message["message_type"].isNil {
                return [nil, .text("\(call.functionName): the WISPAccessGatewayParam is not well-formed XML (\(problem))")]
            }
            return [.table(message)]
        }),
        ("login_form", { (call: borrowing HostCall) throws -> [LuaValue] in
            guard try call.table(0)["login_url"].bytesValue != nil else {
                throw HostError("\(call.functionName): the message has no login_url (a Redirect carries it)")
            }
            var form = LuaTable()
            form["UserName"] = .string(try call.bytes(1))
            form["Password"] = .string(try call.bytes(2))
            form["button"] = "Login"
            form["FNAME"] = "0"
            form["OriginatingServer"] = call[3].isNil ? .text(defaultOriginatingServer) : .string(try call.bytes(3))
            return [.table(form)]
        }),
    ])

    /// For connectivity probes: the LoginURL of a WISPr Redirect in a page a portal put
    /// in a probe's way, which names the portal better than a `Location`.
    @Sendable public static func portalURL(in response: HTTPResponse) -> (url: String, source: PortalURLSource)? {
        guard response.body.count <= maximumPageSize, let loginURL = message(in: response.body)?.message["login_url"].bytesValue
        else { return nil }
        return (String(decoding: loginURL, as: UTF8.self), .wispr)
    }

    /// The message in `page` as `wispr.parse` answers it, and what libxml2 had to recover
    /// from; nil when the page has no envelope.
    private static func message(in page: [UInt8]) -> (message: LuaTable, problem: String?)? {
        guard let xml = envelope(in: page) else { return nil }
        let document = XMLDocument(parsing: escapingBareAmpersands(xml))
        // The nodes belong to the document: it must outlive the reading of its fields.
        return withExtendedLifetime(document) { (messageTable(document.root.map(fields) ?? []), document.problem) }
    }

    // MARK: Finding the message

    /// The `<WISPAccessGatewayParam>` element, found case-insensitively wherever it is (an HTML
    /// comment, the whole document), after the page's XML declaration if it has one (it names the
    /// encoding). Nothing else of the page goes to the parser, a DTD included. Nil when there is none.
    private static func envelope(in page: [UInt8]) -> [UInt8]? {
        let lowered = asciiLowercased(page)
        guard let start = openingTag(in: lowered) else { return nil }
        let rest = lowered[start...]
        let end: Int
        if let closingTag = rest.firstRange(ofBytes: Array("</wispaccessgatewayparam".utf8)) {
            end = lowered[closingTag.upperBound...].firstIndex(of: UInt8(ascii: ">")).map { $0 + 1 } ?? lowered.endIndex
        } else {
            // Unclosed: the comment that hides it from browsers ends it.
            end = rest.firstRange(ofBytes: Array("-->".utf8))?.lowerBound ?? lowered.endIndex
        }
        let byteOrderMark: [UInt8] = [0xEF, 0xBB, 0xBF]
        let prolog = lowered[(lowered.starts(with: byteOrderMark) ? 3 : 0)..<start]
        guard prolog.starts(with: Array("<?xml".utf8)), prolog.dropFirst(5).first.map(isASCIIWhitespace) == true,
              let declarationEnd = prolog.firstRange(ofBytes: Array("?>".utf8))?.upperBound else {
            return Array(page[start..<end])
        }
        return Array(page[..<declarationEnd] + page[start..<end])
    }

    /// Where the first `<wispaccessgatewayparam` tag (in a lower-cased page) starts.
    private static func openingTag(in lowered: [UInt8]) -> Int? {
        let name = Array("<wispaccessgatewayparam".utf8)
        var searched = lowered[...]
        while let match = searched.firstRange(ofBytes: name) {
            let next = lowered[match.upperBound...].first
            if next.map({ isASCIIWhitespace($0) || $0 == UInt8(ascii: ">") || $0 == UInt8(ascii: "/") }) ?? true {
                return match.lowerBound
            }
            searched = lowered[match.upperBound...]
        }
        return nil
    }

    private static let predefinedEntities = Set(["amp", "lt", "gt", "quot", "apos"].map { Array($0.utf8) })

    /// The XML with every `&` that starts no character or predefined entity reference written
    /// `&amp;`, outside CDATA sections. Gateways forget to escape the `&`s of their URLs, and once
    /// libxml2 has met a bad reference it drops every reference after it. Other named references
    /// stay text: the envelope has no DTD to declare them.
    private static func escapingBareAmpersands(_ xml: [UInt8]) -> [UInt8] {
        let cdataStart = Array("<![CDATA[".utf8), cdataEnd = Array("]]>".utf8), entity = Array("amp;".utf8)
        var escaped: [UInt8] = []
        escaped.reserveCapacity(xml.count + xml.count / 8)
        // One pass over the buffer, no slices or generic searches per byte: a page of 500,000
        // `&`s must take milliseconds, even in a debug build.
        xml.withUnsafeBufferPointer { bytes in
            var index = 0
            while index < bytes.count {
                let byte = bytes[index]
                if byte == UInt8(ascii: "<"), matches(cdataStart, in: bytes, at: index) {
                    var sectionEnd = index + cdataStart.count
                    while sectionEnd < bytes.count, !matches(cdataEnd, in: bytes, at: sectionEnd) { sectionEnd += 1 }
                    sectionEnd = min(sectionEnd + cdataEnd.count, bytes.count)
                    escaped.append(contentsOf: bytes[index..<sectionEnd])
                    index = sectionEnd
                    continue
                }
                escaped.append(byte)
                if byte == UInt8(ascii: "&"), !startsReference(bytes, at: index + 1) { escaped.append(contentsOf: entity) }
                index += 1
            }
        }
        return escaped
    }

    private static func matches(_ needle: [UInt8], in bytes: UnsafeBufferPointer<UInt8>, at offset: Int) -> Bool {
        guard offset + needle.count <= bytes.count else { return false }
        return needle.withUnsafeBufferPointer { memcmp(bytes.baseAddress! + offset, $0.baseAddress!, needle.count) == 0 }
    }

    /// Whether what starts at `start`, after a `&`, is `#digits;`, `#xhex;` or a predefined
    /// entity's `name;`.
    private static func startsReference(_ bytes: UnsafeBufferPointer<UInt8>, at start: Int) -> Bool {
        // Looking no further keeps the scan linear; only zero-padded numbers are longer.
        var semicolon = start
        while semicolon < min(bytes.count, start + 16), bytes[semicolon] != UInt8(ascii: ";") { semicolon += 1 }
        guard semicolon < bytes.count, bytes[semicolon] == UInt8(ascii: ";"), semicolon > start else { return false }
        let name = Array(bytes[start..<semicolon])
        guard name[0] == UInt8(ascii: "#") else { return predefinedEntities.contains(name) }
        let isDecimal = { (byte: UInt8) in (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) }
        let digits = name.dropFirst()
        if digits.first == UInt8(ascii: "x") {
            let isHex = { (byte: UInt8) in isDecimal(byte) || (UInt8(ascii: "a")...UInt8(ascii: "f")).contains(byte | 0x20) }
            return digits.count > 1 && digits.dropFirst().allSatisfy(isHex)
        }
        return !digits.isEmpty && digits.allSatisfy(isDecimal)
    }

    // MARK: Reading the message

    private typealias Field = (lowercasedName: String, name: String, value: [UInt8])

    /// The message's fields, in document order, the first of a name winning: the elements under
    /// the envelope that hold text or no other element, with their own text trimmed. Gateways nest
    /// them in a message element (`<Redirect>`, `<AuthenticationReply>`...) or put them right in the
    /// envelope; an unclosed field holds the ones after it, as libxml2 recovers it.
    private static func fields(of envelope: MarkupNode) -> [Field] {
        var fields: [Field] = []
        walk(envelope) { node in
            guard let name = elementName(node), fields.count < maximumElements else { return false }
            let value = trimmedASCIIWhitespace(ownText(node))
            let holdsElements = children(node).contains { elementName($0) != nil }
            if node != envelope, !value.isEmpty || !holdsElements, !fields.contains(where: { $0.name == name }) {
                fields.append((name.lowercased(), name, value))
            }
            return holdsElements
        }
        return fields
    }

    private static let messageNames: [Int64: String] = [
        100: "redirect", 110: "proxy", 120: "authentication_reply", 130: "logoff_reply",
        140: "authentication_poll_reply", 150: "abort_login_reply",
    ]
    /// Well-known elements by their lower-cased names (gateways vary the case), and their fields.
    private static let textFields = [
        ("accessprocedure", "access_procedure"), ("accesslocation", "access_location"), ("locationname", "location_name"),
        ("loginurl", "login_url"), ("abortloginurl", "abort_login_url"), ("nexturl", "next_url"),
        ("logoffurl", "logoff_url"), ("loginresultsurl", "login_results_url"), ("replymessage", "reply_message"),
    ]
    private static let integerFields = [("messagetype", "message_type"), ("responsecode", "response_code"), ("delay", "delay")]

    private static func messageTable(_ fields: [Field]) -> LuaTable {
        let value = { (lowercasedName: String) in fields.first { $0.lowercasedName == lowercasedName }?.value }
        var table = LuaTable()
        for (element, field) in textFields {
            table[field] = value(element).map(LuaValue.string) ?? nil
        }
        for (element, field) in integerFields {
            table[field] = value(element).flatMap { Int64(String(decoding: $0, as: UTF8.self)) }.map(LuaValue.integer) ?? nil
        }
        table["message"] = .text(table["message_type"].integerValue.flatMap { messageNames[$0] } ?? "unknown")
        var elements = LuaTable()
        for field in fields {
            elements[field.name] = .string(field.value)
        }
        table["elements"] = .table(elements)
        return table
    }
}
