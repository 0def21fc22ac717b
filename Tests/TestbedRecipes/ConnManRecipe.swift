/// A real ConnMan as the tests run it on these machines: in the client namespace of a
/// `NetworkManagerRecipe`'s testbed (the same namespaces, veth pair, dnsmasq and portal), on a
/// private system bus, managing the client's end of the veth as ethernet, and kept off the
/// machine's own state: its configuration, /var/lib and /run/connman its own, no host or
/// domain name taken from DHCP, no clock or time zone set. What it writes and runs; starting,
/// waiting for and stopping the processes is the caller's.
public struct ConnManRecipe: Sendable {
    /// The namespaces, the veth pair and the venue's dnsmasq.
    public let testbed: NetworkManagerRecipe

    public init(prefix: String, directory: String) {
        testbed = NetworkManagerRecipe(prefix: prefix, directory: directory)
    }

    /// The folders `files` go in, to make first.
    public var folders: [String] { ["lib", "run"].map { "\(testbed.directory)/connman-\($0)" } }

    /// main.conf, and the settings ConnMan starts from: its clock and time zone left alone
    /// (kept there, not in main.conf, in ConnMan 1.41).
    public var files: [(path: String, text: String)] {
        [("\(testbed.directory)/connman-main.conf", "[General]\nAllowHostnameUpdates=false\nAllowDomainnameUpdates=false\n"),
         ("\(testbed.directory)/connman-lib/settings", "[global]\nTimeUpdates=manual\nTimezoneUpdates=manual\n")]
    }

    /// `sh -c` in the venue's namespace: ConnMan's DHCP client drops offers whose UDP
    /// checksum is left to the hardware, which a veth never fills in.
    public var checksumScript: String {
        "ethtool -K \(testbed.venueInterface) tx off >/dev/null"
    }

    /// `sh -c` in the client namespace (`ip netns exec`, which gives it a mount namespace of
    /// its own): a /var/lib of its own (ConnMan makes /var/lib/connman), its state and run
    /// folders bound in, then ConnMan in the foreground with the ethernet plugin only, on the
    /// client's end of the veth only.
    public var connmanScript: String {
        """
        set -e
        mount -t tmpfs tmpfs /var/lib
        mkdir /var/lib/connman
        mount --bind \(testbed.directory)/connman-lib /var/lib/connman
        mkdir -p /run/connman
        mount --bind \(testbed.directory)/connman-run /run/connman
        exec /usr/sbin/connmand --nodaemon --config=\(testbed.directory)/connman-main.conf -i \(testbed.interface) -p ethernet
        """
    }
}
