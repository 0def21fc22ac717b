import Testing
import HotspotCore

/// A probe is carried typed from where its line is read; its compact text is what the scripts'
/// workers read back.
@Suite struct ProbeTests {
    @Test func theCompactTextNamesTheMethodOnlyWhenItIsNotGETAndTheExpectationAlways() {
        #expect(Probe(url: "http://g.test/generate_204").compactText == "http://g.test/generate_204 status=204")
        #expect(Probe(url: "http://a.test/ok").compactText == "http://a.test/ok contains=success")
        let probe = Probe(url: "https://p.test/ping", method: "HEAD", headers: [.init(name: "X-Client", value: "hh")],
                          expectation: .header(name: "X-Status", value: "online"))
        #expect(probe.compactText == "HEAD https://p.test/ping +X-Client:hh header=X-Status:online")
        #expect(Probe(url: "http://e.test/", expectation: .bodyEquals(" two  words ")).compactText == "http://e.test/ equals= two  words ")
        #expect(Probe(url: "http://m.test/", expectation: .bodyMatches("^ok$")).compactText == "http://m.test/ matches=^ok$")
    }

    @Test func aBareURLExpectsWhatItsEndpointAnswers() {
        #expect(Probe(url: "http://g.test/generate_204").expectation == .status(204))
        #expect(Probe(url: "http://a.test/").expectation == .bodyContains("success"))
        #expect(Probe(url: "http://a.test/").method == "GET")
    }

    @Test func aNetworkCarriesTypedProbes() {
        let probe = Probe(url: "http://g.test/generate_204")
        #expect(NetworkDescription(ssid: "Cafe", probes: [probe]).probes == [probe])
        #expect(NetworkDescription(ssid: "Cafe").probes.isEmpty)
    }
}
