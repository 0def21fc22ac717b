internal import CLibXML2

/// XML as libxml2's parser recovers it, freed with its owner.
///
/// Safe for text from the network: no DTD is loaded, no entity is substituted (so neither
/// an external entity nor an expansion bomb can be read), nothing is fetched, and the
/// parser keeps its own depth and size limits (no `XML_PARSE_HUGE`).
struct XMLDocument: ~Copyable {
    private let document: xmlDocPtr?
    /// libxml2's last complaint when the text was not well-formed (the tree is what it
    /// recovered), else nil.
    let problem: String?

    init(parsing text: [UInt8]) {
        if let libxml2Failure {
            document = nil
            problem = "libxml2 is not usable: \(libxml2Failure)"
            return
        }
        guard let context = hh_xml_new_parser_context() else {
            document = nil
            problem = "libxml2 could not allocate a parser"
            return
        }
        defer { hh_xml_free_parser_context(context) }
        // CDATA sections become plain text, which is all a reader of values wants.
        let options = XML_PARSE_RECOVER.rawValue | XML_PARSE_NONET.rawValue | XML_PARSE_NOERROR.rawValue
            | XML_PARSE_NOWARNING.rawValue | XML_PARSE_NOCDATA.rawValue
        document = text.withUnsafeBufferPointer { bytes in
            bytes.withMemoryRebound(to: CChar.self) {
                hh_xml_context_read_memory(context, $0.baseAddress, Int32(bytes.count), Int32(options))
            }
        }
        guard context.pointee.wellFormed == 0 else {
            problem = nil
            return
        }
        let message = hh_xml_context_last_error(context)?.pointee.message.map { String(cString: $0) } ?? "not well-formed"
        problem = String(decoding: trimmedASCIIWhitespace(Array(message.utf8)), as: UTF8.self)
    }

    deinit {
        if let document { hh_xml_free_document(document) }
    }

    /// The root element; nil when the parser found none.
    var root: MarkupNode? { document.flatMap { hh_xml_root_element($0) } }
}
