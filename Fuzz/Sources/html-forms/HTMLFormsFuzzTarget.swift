import FuzzSupport

/// A page's forms, as `html.forms` reads them for a venue script.
@main enum HTMLFormsFuzzTarget {
    static func main() {
        let harness = ScriptLibraryHarness(script: """
            return { forms = function(page) html.forms(page, 'http://198.18.0.1/portal/login?next=%2F') end }
            """)
        fuzz { page in harness.call("forms", with: page) }
    }
}
