import HotspotCore

/// What each command's handler may do (docs/SCRIPTING.md, "What each command may do"),
/// declared here once: the runtime sends a helper only the secrets its command may read, and
/// the prelude, in the worker, refuses what the command may not do and names the rule.
///
/// - `filter_scan_list` has no network: it runs over the scan list before any network is
///   joined, so it may neither reach a host nor open a socket, and it reads only the Wi-Fi
///   passwords it sets on the networks it claims.
/// - `evaluate` runs in every helper at every join, for networks that are not theirs: it
///   reads no secret, and learns only which it would have (`cmd:has_secret`): the worker is
///   sent their names without their values.
/// - From the command in which the helper is chosen onwards (authenticate, present_ui,
///   maintain, logoff) it reads its secrets and the network's own (`[helper "SSID"]`).
enum CommandPrivileges {
    /// The commands with no network.
    static let withoutNetwork: [HotspotCommand] = [.filterScanList]
    /// The commands that read no secret's value.
    static let withoutSecrets: [HotspotCommand] = [.evaluate]
    /// The secrets the commands without a network may read.
    static let scanListSecrets = ["wifi_password"]

    /// The secrets `helper` may read in `command` on `network`.
    static func secrets(_ secrets: Secrets, of helper: String, in command: HotspotCommand, on network: NetworkDescription?) -> [String: String] {
        let own = secrets.of(helper: helper)
        if withoutNetwork.contains(command) { return own.filter { scanListSecrets.contains($0.key) } }
        let readable = network.map { own.merging(secrets.of(helper: helper, network: $0.ssid)) { $1 } } ?? own
        return withoutSecrets.contains(command) ? readable.mapValues { _ in "" } : readable
    }
}

extension Secrets {
    /// The section of `helper` for one network, `[helper "SSID"]`: read only on that network.
    public func of(helper: String, network ssid: String) -> [String: String] {
        sections["\(helper) \"\(ssid)\""] ?? [:]
    }
}
