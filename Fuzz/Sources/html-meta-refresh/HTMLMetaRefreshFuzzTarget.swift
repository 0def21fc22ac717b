import FuzzSupport

/// A page's `<meta http-equiv="refresh">`, as `html.meta_refresh` reads it for a venue
/// script, with a base URL and without.
@main enum HTMLMetaRefreshFuzzTarget {
    static func main() {
        let harness = ScriptLibraryHarness(script: """
            return { meta_refresh = function(page)
                html.meta_refresh(page, 'http://198.18.0.1/portal/')
                html.meta_refresh(page)
            end }
            """)
        fuzz { page in harness.call("meta_refresh", with: page) }
    }
}
