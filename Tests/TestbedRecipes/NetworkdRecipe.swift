/// A real systemd-networkd as the tests run it on these machines, where systemd is not PID 1:
/// in the client namespace of a `NetworkManagerRecipe`'s testbed (the same namespaces, veth
/// pair, dnsmasq and portal), on a private system bus, managing the client's end of the veth
/// with DHCP. What it writes and runs; starting, waiting for and stopping the processes is the
/// caller's.
public struct NetworkdRecipe: Sendable {
    /// The namespaces, the veth pair and the venue's dnsmasq.
    public let testbed: NetworkManagerRecipe
    /// The network's name as the daemon sees it: the .network file's.
    public let networkName: String

    public init(prefix: String, directory: String, networkName: String) {
        testbed = NetworkManagerRecipe(prefix: prefix, directory: directory)
        self.networkName = networkName
    }

    /// The folder of .network files, bound over /etc/systemd/network.
    public var networkDirectory: String { testbed.directory + "/network" }

    /// The .network file (`networkDirectory`/NAME.network): IPv4 by DHCP on the client's end,
    /// and nothing that would reach beyond the namespace (no host name, no IPv6 link-local).
    public var networkFile: (path: String, text: String) {
        ("\(networkDirectory)/\(networkName).network", """
            [Match]
            Name=\(testbed.interface)
            [Network]
            DHCP=ipv4
            LinkLocalAddressing=no
            IPv6AcceptRA=no
            [DHCPv4]
            UseHostname=no
            SendHostname=no

            """)
    }

    /// `sh -c` in the client namespace (`ip netns exec`, which gives it a mount namespace of
    /// its own): /sys read-only, so networkd does not wait for udev; the .network files and
    /// its own /run/systemd bound over the system's; networkd in the foreground. It drops to
    /// the systemd-network user, who must own its state folder.
    public var networkdScript: String {
        """
        mount -o remount,bind,ro /sys
        mount --bind \(networkDirectory) /etc/systemd/network
        mount -t tmpfs tmpfs /run/systemd
        mkdir -p /run/systemd/netif && chown systemd-network:systemd-network /run/systemd/netif
        exec /lib/systemd/systemd-networkd
        """
    }
}
