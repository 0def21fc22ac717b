import FuzzSupport

/// `json.decode` as scripts call it on what portals answer. What it decodes, `json.encode`
/// writes, and what that wrote decodes and encodes to the same text again.
@main enum JSONDecodeFuzzTarget {
    static func main() {
        let harness = ScriptLibraryHarness(script: """
            return { decode = function(text)
                local decoded, value = pcall(json.decode, text)
                if not decoded then return end
                local encoded = json.encode(value)
                local again = json.encode(json.decode(encoded))
                assert(again == encoded, 'json.encode(json.decode(' .. encoded .. ')) is ' .. again)
            end }
            """)
        fuzz { text in harness.call("decode", with: text) }
    }
}
