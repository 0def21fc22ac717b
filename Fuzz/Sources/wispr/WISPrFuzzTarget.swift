import FuzzSupport
@testable import HotspotNetwork
import ScriptLibraries

/// A page with a WISPr message: `wispr.parse` as scripts call it (and `wispr.login_form` on
/// what it found), and the LoginURL a connectivity probe reads in the page a portal put in
/// its way.
@main enum WISPrFuzzTarget {
    static func main() {
        let harness = ScriptLibraryHarness(script: """
            return { parse = function(page)
                local message = wispr.parse(page)
                if message and message.login_url then wispr.login_form(message, 'guest', 'secret') end
            end }
            """)
        fuzz { page in
            harness.call("parse", with: page)
            _ = WISPrLibrary.portalURL(in: HTTPResponse(status: 200, headers: [], body: page, url: "http://198.18.0.1/", redirects: []))
        }
    }
}
