import Foundation
@testable import PortalRecording
import Testing
import TestSupport

/// What the runtime writes of a helper's failed attempt: HAR that the import reads back, and
/// what of it is private when no login was found in it.
@Suite struct AttemptRecordingTests {
    @Test func encodedExchangesReadBackAsTheyWere() throws {
        let exchanges = try HARFile.parse(Array(try credentialsLogin().data()), name: "login.har")
        let binary = RecordedExchange(
            entry: 5, started: 1_795_900_000.25, method: "GET", url: try #require(RecordedURL("http://portal.aroma.example/logo.png")),
            requestHeaders: [], requestBody: nil, requestContentType: nil, status: 0, responseHeaders: [],
            responseBody: [0, 1, 0xFF, 0x80], responseContentType: "image/png", milliseconds: 3.5, comment: "no response: timeout")
        let encoded = HARFile.encode(exchanges + [binary], creator: ("hotspot-helper", "1"), comment: "a test")
        let read = try HARFile.parse(encoded, name: "written.har")
        #expect(read.map(\.url) == (exchanges + [binary]).map(\.url))
        #expect(read.map(\.status) == [302, 200, 200, 204, 200, 0])
        #expect(read.map(\.started) == (exchanges + [binary]).map(\.started))
        #expect(read[2].requestBody == exchanges[2].requestBody && read[2].requestContentType == exchanges[2].requestContentType)
        #expect(read[1].setCookies == exchanges[1].setCookies && read[1].responseBody == exchanges[1].responseBody)
        #expect(read[5].responseBody == [0, 1, 0xFF, 0x80])
        #expect(try PortalLogin(exchanges: read, source: "written.har").steps.count == 1)
    }

    @Test func theTimesAreISO8601InUTC() {
        #expect(HARFile.timestamp(0) == "1970-01-01T00:00:00.000Z")
        #expect(HARFile.timestamp(1_795_900_000.125) == "2026-11-28T21:06:40.125Z")
        #expect(ISODate.seconds(HARFile.timestamp(951_782_400.5)) == 951_782_400.5)  // 2000-02-29
    }

    @Test func anAttemptsCookiesTokensTypedValuesAndAddressesAreFound() throws {
        var har = credentialsLogin()
        har.add("POST", "http://portal.aroma.example/api/login?ticket=Zq81mPx0wLk2", status: 200,
                body: "<p>Welcome back, someone.else@example.net!</p>", postData: #"{"room": "1204", "email": "guest@example.org"}"#)
        let exchanges = try HARFile.parse(Array(try har.data()), name: "attempt.har")
        let found = Dictionary(Redaction(attempt: exchanges).values.map { ($0.value, $0.kind) }, uniquingKeysWith: { first, _ in first })
        #expect(found[recordedCookie] == .cookie)
        #expect(found[recordedToken] == .token)
        #expect(found["Zq81mPx0wLk2"] == .token)
        #expect(found[recordedPassword] == .typed && found[recordedUser] == .typed)
        #expect(found["1204"] == .typed && found["guest@example.org"] == .typed && found["someone.else@example.net"] == .typed)
        #expect(found["Log in"] == nil && found["/login"] == nil)
    }
}
