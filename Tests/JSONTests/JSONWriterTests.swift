import JSON
import Testing

/// The one JSON writer, which the event lines, `json.encode` and the simulator share.
@Suite("JSON writer")
struct JSONWriterTests {
    func written(_ value: JSONValue, layout: JSONWriter.Layout = .compact) -> String {
        String(decoding: value.serialized(layout: layout), as: UTF8.self)
    }

    func string(_ text: String) -> JSONValue { .string(Array(text.utf8)) }

    @Test func quotesAndBackslashesTakeABackslash() {
        #expect(written(string(#"say "hi" \ bye"#)) == #""say \"hi\" \\ bye""#)
    }

    @Test func controlCharactersHaveShortFormsOrLowercaseHex() {
        #expect(written(string("a\nb\rc\td")) == #""a\nb\rc\td""#)
        #expect(written(.string([0x00, 0x08, 0x0C, 0x1B, 0x1F])) == #""\u0000\u0008\u000c\u001b\u001f""#)
        #expect(written(.string([0x20, 0x7F])) == "\" \u{7F}\"")
    }

    @Test func slashesNonASCIIAndInvalidUTF8StayAsTheyAre() {
        #expect(written(string("http://café.example/☕︎")) == "\"http://café.example/☕︎\"")
        #expect(JSONValue.string([0xFF, 0xC3]).serialized() == [UInt8(ascii: "\""), 0xFF, 0xC3, UInt8(ascii: "\"")])
    }

    @Test func numbersHaveNoFractionWhenTheyHaveNone() {
        #expect(written(.array([.integer(-42), .integer(.max), .number(12), .number(-3), .number(12.5), .number(-0.0)]))
                == "[-42,9223372036854775807,12,-3,12.5,0]")
        #expect(written(.array([.number(1e20), .number(0.1), .number(1e-7)])) == "[1e+20,0.1,1e-07]")
    }

    @Test func membersKeepTheirOrderAndNestingWorks() {
        let document = JSONValue(members: [
            ("z", .null), ("a", .array([.boolean(true), .array([]), .object([])])),
            ("m", JSONValue(members: [("x", .array([.integer(1), JSONValue(members: [("y", .boolean(false))])]))])),
        ])
        #expect(written(document) == #"{"z":null,"a":[true,[],{}],"m":{"x":[1,{"y":false}]}}"#)
        #expect(written(document, layout: .spaced) == #"{"z": null, "a": [true, [], {}], "m": {"x": [1, {"y": false}]}}"#)
    }

    @Test func keysAreEscapedAsStrings() {
        #expect(written(.object([(Array("a\"\n".utf8), .integer(1))])) == #"{"a\"\n":1}"#)
    }

    @Test func whatItWritesTheParserReadsBack() throws {
        let document = JSONValue(members: [
            ("text", .string(Array("tab\t, quote \", control \u{01}, é".utf8))), ("list", .array([.integer(1), .number(2.5), .null])),
        ])
        #expect(try JSONValue.parse(document.serialized(), maximumDepth: 8) == document)
    }
}
