import FuzzSupport
@testable import HotspotCore
@testable import HotspotRuntime

/// Bytes from outside (a portal's URL or page, an SSID, a script's message) through the one
/// escaping every text output uses, the SSID's bytes as text, and a timeline line carrying
/// them. Nothing that reaches a terminal holds a control character; an SSID that needed no
/// escaping is its bytes as they are, and escaped text needs no escaping again.
@main enum TextEscapingFuzzTarget {
    static func main() {
        fuzz { bytes in
            let text = String(decoding: bytes, as: UTF8.self)
            let escaped = text.escapingControlCharacters()
            require(!hasControl(escaped), "a control character is left in \(escaped.debugDescription)")
            require(escaped.escapingControlCharacters() == escaped, "escaped text is escaped again otherwise")

            let ssid = String.ssid(bytes)
            require(!hasControl(ssid.text), "a control character is left in the SSID \(ssid.text.debugDescription)")
            require(ssid.escaped || Array(ssid.text.utf8) == bytes, "an SSID that needed no escaping is not its bytes")

            let line = HotspotEvent.log(.warn, text, network: ssid.text, helper: text).timelineLine(colored: false)
            require(!hasControl(line), "a control character reached the timeline: \(line.debugDescription)")
            let bounded = text.boundedLikeALogLine()
            require(bounded.utf8.count <= String.maximumLineBytes, "a line is longer than a log line may be")
        }
    }

    static func hasControl(_ text: String) -> Bool {
        text.unicodeScalars.contains { $0.properties.generalCategory == .control }
    }
}
