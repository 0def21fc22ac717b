import FuzzSupport

/// A page's visible text, as `html.text` reads it for a venue script.
@main enum HTMLTextFuzzTarget {
    static func main() {
        let harness = ScriptLibraryHarness(script: "return { text = function(page) html.text(page) end }")
        fuzz { page in harness.call("text", with: page) }
    }
}
