import FuzzSupport
import HotspotNetwork

/// An RFC 8908 Captive Portal API answer, as the client reads it.
@main enum CaptivePortalAPIFuzzTarget {
    static func main() {
        fuzz { body in
            _ = try? CaptivePortalAPI.status(body: body, contentType: CaptivePortalAPI.mediaType)
        }
    }
}
