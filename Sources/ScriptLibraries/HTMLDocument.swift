#if canImport(Glibc)
import Glibc
#endif
internal import CLibXML2
import LuaSandbox

/// A node of a tree libxml2 built, from its HTML or its XML parser.
typealias MarkupNode = UnsafeMutablePointer<xmlNode>

/// Why libxml2 cannot be used (not installed, or lacking a function), or nil once it is
/// loaded: the first page or message read loads it, in the process that reads it, so no
/// process pays for it (and, for Debian's, the ICU it brings) at its start.
let libxml2Failure: String? = hh_xml_load().map { String(cString: $0) }

/// A page as libxml2's HTML parser recovers it, freed with its owner.
///
/// The parser keeps its own limits (no `HTML_PARSE_HUGE`): it stops reading a page at
/// elements nested 256 deep, so hostile pages stay cheap. It never fetches anything, and HTML
/// has no entity declarations to expand; character references are decoded as browsers do.
struct HTMLDocument: ~Copyable {
    private let document: htmlDocPtr?

    init(parsing page: [UInt8], for functionName: String) throws(HostError) {
        if let libxml2Failure { throw HostError("\(functionName): libxml2 is not usable: \(libxml2Failure)") }
        let options = HTML_PARSE_RECOVER.rawValue | HTML_PARSE_NOERROR.rawValue | HTML_PARSE_NOWARNING.rawValue
            | HTML_PARSE_NONET.rawValue
        document = page.withUnsafeBufferPointer { bytes in
            bytes.withMemoryRebound(to: CChar.self) { hh_html_read_memory($0.baseAddress, Int32(bytes.count), Int32(options)) }
        }
    }

    deinit {
        if let document { hh_xml_free_document(document) }
    }

    /// The `<html>` element; nil for a page with no content at all.
    var root: MarkupNode? { document.flatMap { hh_xml_root_element($0) } }
}

/// Visits `root` and everything under it in document order, without recursion (pages
/// nest deeply). `enter` says whether to visit a node's children; `leave` is called once
/// a node and its children are done.
func walk(_ root: MarkupNode, enter: (MarkupNode) -> Bool, leave: (MarkupNode) -> Void = { _ in }) {
    var node = root
    while true {
        if enter(node), let child = node.pointee.children {
            node = child
            continue
        }
        while true {
            leave(node)
            if node == root { return }
            if let next = node.pointee.next {
                node = next
                break
            }
            node = node.pointee.parent
        }
    }
}

/// The element's tag name, or nil for other nodes. The HTML parser lower-cases names; the
/// XML parser keeps them as written.
func elementName(_ node: MarkupNode) -> String? {
    node.pointee.type == XML_ELEMENT_NODE ? String(cString: node.pointee.name) : nil
}

/// An attribute's value (HTML names are lower-case), nil when the element has no such attribute.
func attribute(_ element: MarkupNode, _ name: String) -> [UInt8]? {
    var property = element.pointee.properties
    while let current = property {
        if String(cString: current.pointee.name) == name {
            // The parser stores a value as text children of the attribute.
            return Array(siblings(from: current.pointee.children).compactMap(text).joined())
        }
        property = current.pointee.next
    }
    return nil
}

/// The element's children, in order.
func children(_ element: MarkupNode) -> some Sequence<MarkupNode> {
    siblings(from: element.pointee.children)
}

private func siblings(from first: MarkupNode?) -> some Sequence<MarkupNode> {
    sequence(state: first) { (node: inout MarkupNode?) -> MarkupNode? in
        defer { node = node?.pointee.next }
        return node
    }
}

/// The element's own text: its text children joined, not the text of elements inside it
/// (the parser nests unclosed elements, and reading their text too would repeat work).
func ownText(_ element: MarkupNode) -> [UInt8] {
    var bytes: [UInt8] = []
    for child in children(element) {
        if let content = text(child) { bytes.append(contentsOf: content) }
    }
    return bytes
}

/// The content of a text node; nil for other nodes.
func text(_ node: MarkupNode) -> [UInt8]? {
    guard node.pointee.type == XML_TEXT_NODE, let content = node.pointee.content else { return nil }
    return Array(UnsafeBufferPointer(start: content, count: strlen(UnsafeRawPointer(content).assumingMemoryBound(to: CChar.self))))
}

/// Text with runs of white space (no-break spaces too) made single spaces, and trimmed.
struct CollapsedText {
    private(set) var bytes: [UInt8] = []
    private var pendingSpace = false

    /// Separates what comes next from what came before, as a block boundary does.
    mutating func breakWords() {
        pendingSpace = !bytes.isEmpty
    }

    mutating func append(_ text: [UInt8]) {
        var index = 0
        while index < text.count {
            switch text[index] {
            case let byte where isASCIIWhitespace(byte):
                breakWords()
            case 0xC2 where index + 1 < text.count && text[index + 1] == 0xA0:
                breakWords()
                index += 1
            case let byte:
                if pendingSpace { bytes.append(0x20) }
                pendingSpace = false
                bytes.append(byte)
            }
            index += 1
        }
    }
}

func isASCIIWhitespace(_ byte: UInt8) -> Bool {
    byte == 0x20 || byte == 0x09 || byte == 0x0A || byte == 0x0C || byte == 0x0D
}

/// The bytes without the ASCII white space at either end.
func trimmedASCIIWhitespace(_ bytes: [UInt8]) -> [UInt8] {
    guard let first = bytes.firstIndex(where: { !isASCIIWhitespace($0) }),
          let last = bytes.lastIndex(where: { !isASCIIWhitespace($0) }) else { return [] }
    return Array(bytes[first...last])
}

extension ArraySlice<UInt8> {
    /// Where `needle` first occurs. The standard library's generic search instantiates
    /// metadata at every comparison in a debug build: seconds on a hostile megabyte page.
    func firstRange(ofBytes needle: [UInt8]) -> Range<Int>? {
        guard let first = needle.first else { return startIndex..<startIndex }
        return withUnsafeBufferPointer { haystack -> Range<Int>? in
            needle.withUnsafeBufferPointer { needle -> Range<Int>? in
                var offset = 0
                while offset + needle.count <= haystack.count {
                    if haystack[offset] == first, memcmp(haystack.baseAddress! + offset, needle.baseAddress!, needle.count) == 0 {
                        return (startIndex + offset)..<(startIndex + offset + needle.count)
                    }
                    offset += 1
                }
                return nil
            }
        }
    }
}

func asciiLowercased(_ bytes: [UInt8]) -> [UInt8] {
    var lowered = bytes
    lowered.withUnsafeMutableBufferPointer { buffer in
        for index in buffer.indices where buffer[index] >= UInt8(ascii: "A") && buffer[index] <= UInt8(ascii: "Z") {
            buffer[index] += 32
        }
    }
    return lowered
}
