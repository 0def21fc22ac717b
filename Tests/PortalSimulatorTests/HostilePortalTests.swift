import Foundation
#if canImport(FoundationXML)
import FoundationXML
#endif
import PortalSimulator
import Testing
import TestSupport

@Suite(.serialized) struct HostilePortalTests {
    @Test func gzipBombIsSmallAndInflatesPast64MiB() async throws {
        try await withPortal(.hostile) { portal async throws in
            let bomb = try await Device(portal).get("/gzip-bomb")
            #expect(bomb.status == 200)
            #expect(bomb.header("Content-Encoding") == "gzip")
            #expect(bomb.header("Content-Length") == String(bomb.body.count))
            #expect(bomb.body.count < 100_000)
            #expect(bomb.body.starts(with: [0x1F, 0x8B, 8]))
            let path = scratchPath("bomb")
            try bomb.body.write(to: URL(fileURLWithPath: path))
            defer { try? FileManager.default.removeItem(atPath: path) }
            // gzip checks the CRC and the length in the trailer too.
            let inflated = try await runProcess("/bin/sh", ["-c", "gzip -dc < '\(path)' | wc -c"])
            #expect(inflated.status == 0, "\(inflated.errors)")
            let size = try #require(Int(inflated.text.trimmingCharacters(in: .whitespacesAndNewlines)))
            #expect(size >= 64 * 1024 * 1024)
        }
    }

    @Test func hugeIsFiftyMiBWithoutALength() async throws {
        try await withPortal(.hostile) { portal async throws in
            let huge = try await Device(portal).get("/huge")
            #expect(huge.status == 200)
            #expect(huge.header("Content-Length") == nil)
            #expect(huge.body.count == 50 * 1024 * 1024)
        }
    }

    @Test func dripSendsAByteEveryTenthOfASecond() async throws {
        try await withPortal(.hostile) { portal async throws in
            let drip = try await Device(portal).get("/drip", maxTime: 0.6, extra: ["-N"])
            #expect(drip.status == 200)
            #expect((2...8).contains(drip.body.count), "\(drip.body.count) bytes in 0.6 s")
            #expect("<html><body>".hasPrefix(drip.text))
        }
    }

    @Test func loopsRedirectForEver() async throws {
        try await withPortal(.hostile) { portal async throws in
            let device = Device(portal)
            let loop = try await device.get("/loop")
            #expect(loop.status == 302 && loop.header("Location") == "http://portal.aroma.example:\(portal.port)/loop")
            #expect(try await device.get("/loop-a").header("Location") == "/loop-b")
            #expect(try await device.get("/loop-b").header("Location") == "/loop-a")
            let followed = try await device.get("/loop", extra: ["-L", "--max-redirs", "20"])
            #expect(followed.status == 302)  // curl gave up
        }
    }

    @Test func malformedDocumentsDoNotParse() async throws {
        try await withPortal(.hostile) { portal async throws in
            let device = Device(portal)
            let xml = try await device.get("/bad.xml")
            #expect(xml.header("Content-Type") == "application/xml")
            #expect(xml.text.contains("<WISPAccessGatewayParam"))
            let parser = XMLParser(data: xml.body)
            _ = parser.parse()  // true on Linux even after errors: parserError tells
            #expect(parser.parserError != nil)
            let json = try await device.get("/bad.json")
            #expect(json.header("Content-Type") == "application/json")
            #expect(json.text.hasPrefix(#"{"captive""#))
            #expect(throws: (any Error).self) { try JSONSerialization.jsonObject(with: json.body) }
        }
    }

    @Test func pathologicalHTMLIsDeepWideAndUnclosed() async throws {
        try await withPortal(.hostile) { portal async throws in
            let page = try await Device(portal).get("/pathological.html")
            #expect(page.status == 200)
            #expect(page.body.count > 1024 * 1024)
            #expect(page.text.components(separatedBy: "<div>").count > 100_000)
            #expect(page.text.contains(String(repeating: "a", count: 1024 * 1024)))
            let lastComment = try #require(page.text.range(of: "<!--", options: .backwards))
            #expect(!page.text[lastComment.upperBound...].contains("-->"))
        }
    }

    @Test func messyLoginNeedsTheRealFormsDecodedToken() async throws {
        try await withPortal(.hostile) { portal async throws in
            let device = Device(portal)
            let page = try await device.get("/login")
            #expect(page.status == 200)
            #expect(page.text.contains("<FORM Method=POST ACTION='/login?src=portal&amp;lang=en'"))
            #expect(try await device.post("/trap", [("token", "comment")]).status == 400)
            let undecoded = try await device.post("/login?src=portal&lang=en", [("token", "K7&amp;q=&quot;1&quot;"), ("agree", "yes")])
            #expect(undecoded.status == 403)
            #expect(try await device.post("/login", [("token", #"K7&q="1""#)]).status == 400)
            #expect(try await device.get("/generate_204").status == 302)
            let decoded = try await device.post("/login?src=portal&lang=en", [("token", #"K7&q="1""#), ("agree", "yes")])
            #expect(decoded.status == 200)
            #expect(try await device.get("/generate_204").status == 204)
        }
    }
}
