/// One connectivity probe: a request, and what an open Internet answers to it.
///
/// On the command line and in configuration a probe is one line in a compact syntax:
///
///     [METHOD] URL [+Name:value]... [EXPECTATION]
///
/// `METHOD` is a word in capitals (`GET` by default, `HEAD`, `POST`...); each `+Name:value`
/// adds a request header (its value cannot hold a space); `EXPECTATION` is one of
/// `status=CODE`, `contains=TEXT`, `equals=TEXT`, `matches=REGEX` (POSIX extended) or
/// `header=Name:value`, and takes the rest of the line, spaces included. Without one, a
/// URL ending in `generate_204` expects 204 and any other a 200 whose body says "success".
///
///     http://connectivitycheck.gstatic.com/generate_204
///     http://nmcheck.gnome.org/check_network_status.txt header=X-NetworkManager-Status:online
///     HEAD https://probe.example/ping +X-Client:hotspot-helper status=200
///
/// The line is read once, where it is given (`Probe.parse` in HotspotNetwork, which checks
/// the URL and the regular expression); from there on a network carries the typed probe, and
/// `compactText` writes it back for the scripts' workers, which read it in their own process.
public struct Probe: Sendable, Hashable {
    public enum Expectation: Sendable, Hashable {
        /// The response has this status.
        case status(Int)
        /// A 200 whose body contains the text (case-insensitive).
        case bodyContains(String)
        /// A 200 whose body is the text, surrounding whitespace aside.
        case bodyEquals(String)
        /// A 200 whose body matches the POSIX extended regular expression (`^` and `$` match
        /// at every line).
        case bodyMatches(String)
        /// A 2xx with this header, its value compared case-insensitively.
        case header(name: String, value: String)
    }

    public struct Header: Sendable, Hashable {
        public var name: String
        public var value: String

        public init(name: String, value: String) {
            self.name = name
            self.value = value
        }
    }

    public var url: String
    public var method: String
    public var headers: [Header]
    public var expectation: Expectation

    public init(url: String, method: String = "GET", headers: [Header] = [], expectation: Expectation) {
        self.url = url
        self.method = method
        self.headers = headers
        self.expectation = expectation
    }

    /// A probe for a bare URL: 204 for a `generate_204` endpoint, else a 200 that says "success".
    public init(url: String) {
        self.init(url: url, expectation: url.hasSuffix("generate_204") ? .status(204) : .bodyContains("success"))
    }

    /// The well-known endpoints of Apple, Google and Firefox.
    public static let defaults = [
        Probe(url: "http://captive.apple.com/hotspot-detect.html", expectation: .bodyContains("Success")),
        Probe(url: "http://connectivitycheck.gstatic.com/generate_204", expectation: .status(204)),
        Probe(url: "http://detectportal.firefox.com/success.txt", expectation: .bodyContains("success")),
    ]

    /// The probe in the compact syntax, which `Probe.parse` reads back to an equal probe: the
    /// method only when it is not `GET`, the expectation always.
    public var compactText: String {
        var words = method == "GET" ? [] : [method]
        words.append(url)
        words += headers.map { "+\($0.name):\($0.value)" }
        switch expectation {
        case .status(let code): words.append("status=\(code)")
        case .bodyContains(let text): words.append("contains=\(text)")
        case .bodyEquals(let text): words.append("equals=\(text)")
        case .bodyMatches(let pattern): words.append("matches=\(pattern)")
        case .header(let name, let value): words.append("header=\(name):\(value)")
        }
        return words.joined(separator: " ")
    }
}
