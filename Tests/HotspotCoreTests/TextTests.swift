import Testing
@testable import HotspotCore

@Suite("Text from outside")
struct TextTests {
    /// A portal's `Location` header or an SSID could retitle the terminal (OSC), clear it
    /// (CSI), forge lines (CR, LF) or cut them (NUL); C1 controls act like ESC on some terminals.
    @Test func controlCharactersAreWrittenAsEscapes() {
        #expect("http://portal.test/\u{1B}]0;owned\u{07}\u{1B}[2J".escapingControlCharacters()
                == #"http://portal.test/\x1b]0;owned\x07\x1b[2J"#)
        #expect("a\r\nb\u{0}c\u{7F}d\u{9B}e".escapingControlCharacters() == #"a\x0d\x0ab\x00c\x7fd\xc2\x9be"#)
        #expect("Café ☕ C:\\dir".escapingControlCharacters() == "Café ☕ C:\\dir", "printable text is left as it is")
    }

    @Test func anSSIDsBytesStayDistinct() {
        #expect(String.ssid([0x41, 0xff]).text != String.ssid([0x41, 0xfe]).text)
        #expect(String.ssid([0x41, 0xff]) == (#"A\xff"#, true))
        // SSIDs are bytes: the NFC and NFD forms of one name are two networks' names.
        let composed = String.ssid(Array("Caf\u{E9}".utf8)).text, decomposed = String.ssid(Array("Cafe\u{301}".utf8)).text
        #expect(!composed.utf8.elementsEqual(decomposed.utf8))
    }

    @Test func aLongErrorIsCutLikeALogLineBetweenCharacters() {
        let page = String(repeating: "é", count: 5000)  // 10,000 bytes
        let cut = page.boundedLikeALogLine()
        #expect(cut.utf8.count <= String.maximumLineBytes)
        #expect(cut.hasSuffix(" [cut: 10000 bytes in all]"))
        #expect(cut.hasPrefix(String(repeating: "é", count: 2000)))
        #expect("short".boundedLikeALogLine() == "short")
    }
}
