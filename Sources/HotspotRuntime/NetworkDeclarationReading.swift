public import HotspotCore
import LuaSandbox
import ScriptContract

/// A script's `networks` as Lua gives them (docs/SCRIPTING.md, "Declaring networks"):
///
///     networks = { ssids = { "Campus Guest" }, ssid_patterns = { "Campus-*" }, bssid_prefixes = { "02:5e:10" },
///                  portal_hosts = { "login.campus.example" }, gateway_families = { "coovachilli" } }
extension NetworkDeclaration {
    /// What is wrong with a declaration: the first problem, naming the field.
    public struct ReadingProblem: Error, Sendable, Equatable, CustomStringConvertible {
        public let description: String
    }

    typealias Field = ScriptNames.NetworksKey

    /// Far more than a venue's names; a roaming provider's thousands of venues are helpers of
    /// their own, so that each is loaded only where it is met.
    static let maximumEntries = 1000

    init(lua value: LuaValue) throws(ReadingProblem) {
        func problem(_ message: String) -> ReadingProblem { ReadingProblem(description: message) }
        let fields = Field.allCases.map(\.rawValue).map { "`\($0)`" }.joined(separator: ", ")
        guard let table = value.tableValue else { throw problem("`networks` must be a table of \(fields)") }
        for key in table.entries.keys {
            guard let name = key.stringValue, Field(rawValue: name) != nil else {
                throw problem("`networks` has an unknown field `\(key.stringValue ?? "?")`; its fields are \(fields)")
            }
        }
        func strings(_ field: Field) throws(ReadingProblem) -> [String] {
            let value = table[field.rawValue]
            if value.isNil { return [] }
            guard let list = value.tableValue?.array, list.count == value.tableValue?.entries.count else {
                throw problem("`networks.\(field.rawValue)` must be a list of strings")
            }
            guard list.count <= Self.maximumEntries else {
                throw problem("`networks.\(field.rawValue)` has \(list.count) entries; use at most \(Self.maximumEntries)")
            }
            var texts: [String] = []
            for (index, entry) in list.enumerated() {
                guard let text = entry.stringValue else { throw problem("`networks.\(field.rawValue)[\(index + 1)]` must be a string") }
                texts.append(text)
            }
            return texts
        }
        let ssids = try strings(.ssids)
        for ssid in ssids where ssid.isEmpty || ssid.utf8.count > 32 {
            throw problem("`networks.ssids`: \"\(ssid.prefix(40))\" is \(ssid.utf8.count) bytes; an SSID has 1 to 32")
        }
        var patterns: [SSIDPattern] = []
        for text in try strings(.ssidPatterns) {
            switch SSIDPattern.parse(text) {
            case .success(let pattern): patterns.append(pattern)
            case .failure(let error): throw problem("`networks.ssid_patterns`: \(error.description)")
            }
        }
        let prefixes = try strings(.bssidPrefixes)
        for prefix in prefixes where !Self.isBSSIDPrefix(prefix) {
            throw problem("`networks.bssid_prefixes`: \"\(prefix.prefix(40))\" is no BSSID prefix; give 1 to 6 hexadecimal octets "
                          + "separated by colons, such as \"02:5e:10\"")
        }
        var hosts: [HostPattern] = []
        for text in try strings(.portalHosts) {
            switch HostPattern.parse(text) {
            case .success(let host): hosts.append(host)
            case .failure(let error):
                throw problem("`networks.\(Field.portalHosts.rawValue)`: \(error.description); give the host the network's portal redirects to, "
                              + "such as \"login.campus.example\", or \"*.campus.example\" for any name below that domain")
            }
        }
        var families: [GatewayFamily] = []
        for name in try strings(.gatewayFamilies) {
            guard let family = GatewayFamily(rawValue: name) else {
                let known = GatewayFamily.allCases.map(\.rawValue).joined(separator: ", ")
                if GatewayFamily.recognisedByTheirPageOnly.contains(name) {
                    throw problem("`networks.\(Field.gatewayFamilies.rawValue)`: \"\(name)\" is told apart only by its login page, which no code has read "
                                  + "when a declared helper is chosen; declare its `\(Field.portalHosts.rawValue)`, or leave the choice to `evaluate`")
                }
                throw problem("`networks.\(Field.gatewayFamilies.rawValue)`: \"\(name.prefix(40))\" is no gateway family; the families are \(known)")
            }
            families.append(family)
        }
        guard !(ssids.isEmpty && patterns.isEmpty && prefixes.isEmpty && hosts.isEmpty && families.isEmpty) else {
            throw problem("`networks` declares no network; leave it out to have `evaluate` judge each network")
        }
        self.init(ssids: ssids, ssidPatterns: patterns, bssidPrefixes: prefixes, portalHosts: hosts, gatewayFamilies: families)
    }

    private static func isBSSIDPrefix(_ text: String) -> Bool {
        let octets = text.split(separator: ":", omittingEmptySubsequences: false)
        return (1...6).contains(octets.count) && octets.allSatisfy { $0.count == 2 && $0.allSatisfy(\.isHexDigit) }
    }
}

extension HelperScript {
    /// Each network declared by two helpers, reported at the later one's script: the runtime
    /// would choose the first by name and never ask the other.
    public static func sharedDeclarations(among helpers: [HelperScript]) -> [ScriptProblem] {
        NetworkDeclaration.sharedEntries(helpers.map(\.declaredNetworks)).map { index, earlier, entry in
            ScriptProblem(location: helpers[index].path,
                          message: "`networks`: \(helpers[earlier].id) declares \(entry) as well; \(helpers[earlier].id) would be "
                              + "chosen and \(helpers[index].id) never asked")
        }
    }
}
