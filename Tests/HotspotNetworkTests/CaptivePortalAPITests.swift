import HotspotNetwork
import Testing
import TestSupport

/// RFC 8908 validation, on bodies and against a local server.
@Suite("Captive Portal API")
struct CaptivePortalAPITests {
    func status(_ body: String, type: String? = "application/captive+json", allowsPlainHTTP: Bool = false) throws(HTTPFailure) -> CaptivePortalStatus {
        try CaptivePortalAPI.status(body: Array(body.utf8), contentType: type, allowsPlainHTTP: allowsPlainHTTP)
    }

    func failure(_ body: () throws(HTTPFailure) -> Any?) -> HTTPFailure? {
        do {
            _ = try body()
            return nil
        } catch {
            return error
        }
    }

    @Test func everyFieldIsRead() throws {
        let full = try status("""
            {"captive": false, "user-portal-url": "https://portal.example/login", "venue-info-url": "https://venue.example/",
             "can-extend-session": true, "seconds-remaining": 326, "bytes-remaining": 65536.5, "future-field": [1, {"x": 2}]}
            """, type: "Application/Captive+JSON; charset=utf-8")
        #expect(full == CaptivePortalStatus(captive: false, userPortalURL: "https://portal.example/login",
                                            venueInfoURL: "https://venue.example/", canExtendSession: true,
                                            secondsRemaining: 326, bytesRemaining: 65536.5))
        #expect(try status(#"{"captive": true}"#) == CaptivePortalStatus(captive: true))
    }

    @Test func plainHTTPPortalURLsAreLeftOutUnlessAllowed() throws {
        let body = #"{"captive": true, "user-portal-url": "http://portal.example/", "venue-info-url": "ftp://venue.example/"}"#
        #expect(try status(body).userPortalURL == nil)
        #expect(try status(body, allowsPlainHTTP: true).userPortalURL == "http://portal.example/")
        #expect(try status(body, allowsPlainHTTP: true).venueInfoURL == nil)
    }

    @Test(arguments: [
        (#"{"captive": tru}"#, "application/captive+json", "protocol: the Captive Portal API answered malformed JSON"),
        (#"{"captive": "yes"}"#, "application/captive+json", #"protocol: the Captive Portal API answered no boolean "captive""#),
        (#"{"user-portal-url": "https://p.example/"}"#, "application/captive+json", #"protocol: the Captive Portal API answered no boolean "captive""#),
        (#"[true]"#, "application/captive+json", "protocol: the Captive Portal API answered JSON that is not an object"),
        (#"{"captive": true}"#, "application/json", "protocol: the Captive Portal API answered application/json, not application/captive+json"),
        (#"{"captive": true}"#, "text/html", "protocol: the Captive Portal API answered text/html"),
    ])
    func invalidAnswersAreRefused(_ body: String, _ type: String, _ message: String) {
        let refused = failure { () throws(HTTPFailure) in try status(body, type: type) }
        #expect(refused?.description.hasPrefix(message) == true, "\(String(describing: refused))")
    }

    @Test func noMediaTypeAndOversizeBodiesAreRefused() {
        #expect(failure { () throws(HTTPFailure) in try status(#"{"captive": true}"#, type: nil) }?.kind == .protocol)
        let padded = #"{"captive": true, "padding": ""# + String(repeating: "x", count: 4096) + #""}"#
        #expect(failure { () throws(HTTPFailure) in try status(padded) }?.kind == .tooLarge)
    }

    @Test func theUnrestrictedURNMeansNoPortalWithoutARequest() throws {
        #expect(try CaptivePortalAPI.fetch("urn:ietf:params:capport:unrestricted", binding: NetworkBinding()) == nil)
    }

    @Test func plainHTTPIsRefusedUnlessAllowed() async throws {
        let server = try await TestHTTPServer.start()
        defer { server.stop() }
        let uri = "http://127.0.0.1:\(server.port)/respond?type=application/captive%2Bjson&body=%7B%22captive%22:true%7D"
        let refused = try await onOwnThread {
            self.failure { () throws(HTTPFailure) in try CaptivePortalAPI.fetch(uri, binding: NetworkBinding()) }
        }
        #expect(refused?.kind == .notAllowed)
        #expect(server.hostsReached.isEmpty)  // refused before anything was sent
        let allowed = try await onOwnThread { try CaptivePortalAPI.fetch(uri, binding: NetworkBinding(), allowsPlainHTTP: true) }
        #expect(allowed == CaptivePortalStatus(captive: true))
        #expect(failure { () throws(HTTPFailure) in try CaptivePortalAPI.fetch("ftp://127.0.0.1/api", binding: NetworkBinding()) }?.kind == .notAllowed)
    }

    @Test func onlyA200WithTheBodyWithinTheLimitIsAccepted() async throws {
        let server = try await TestHTTPServer.start()
        defer { server.stop() }
        let base = "http://127.0.0.1:\(server.port)"
        let cases: [(String, HTTPFailure.Kind)] = [
            ("/respond?status=404&type=application/captive%2Bjson&body=%7B%22captive%22:true%7D", .protocol),
            ("/redirect/302?to=/respond", .protocol),  // an API answer is not followed elsewhere
            ("/big", .tooLarge),
            ("/respond?type=application/captive%2Bjson&body=%7B", .protocol),
        ]
        for (path, kind) in cases {
            let refused = try await onOwnThread {
                self.failure { () throws(HTTPFailure) in try CaptivePortalAPI.fetch(base + path, binding: NetworkBinding(), allowsPlainHTTP: true) }
            }
            #expect(refused?.kind == kind, "\(path): \(String(describing: refused))")
        }
    }
}
