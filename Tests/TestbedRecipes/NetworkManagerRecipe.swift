/// A real NetworkManager as the tests and the bench run it on these machines, which have no
/// Wi-Fi and no udev: in a network namespace of its own (the client), on a private system
/// bus, managing one end of a veth pair; the other end's namespace (the venue) has dnsmasq for
/// DHCP and DNS and a portal at 198.18.0.1. What each step writes and runs, named after a
/// prefix so that testbeds side by side do not meet; starting the processes, waiting for them
/// and stopping them by their ids is the caller's.
public struct NetworkManagerRecipe: Sendable {
    /// The venue's address: its gateway, name server and portal.
    public static let venueAddress = "198.18.0.1"

    /// The namespaces.
    public let client: String
    public let venue: String
    /// The client's end of the veth pair, the one device NetworkManager manages.
    public let interface: String
    public let venueInterface: String
    /// Where NetworkManager's configuration and state go (the caller's scratch directory).
    public let directory: String

    public init(prefix: String, directory: String) {
        client = prefix + "-cli"
        venue = prefix + "-srv"
        interface = prefix + "c0"
        venueInterface = prefix + "s0"
        self.directory = directory
    }

    /// The folders `directory` needs before NetworkManager starts.
    public var folders: [String] {
        ["run", "varlib", "etc", "connections", "conf.d", "sysconf.d"].map { "\(directory)/\($0)" }
    }

    /// NetworkManager.conf: `interface` the only device managed, profiles from
    /// `directory`/connections, the system's DNS and host name left alone, no polkit.
    /// - Parameters:
    ///   - dhcp: "dhclient", the one client of NetworkManager's that shows DHCP option 114, or
    ///     "internal".
    ///   - connectivityCheck: the URI NetworkManager checks connectivity with (204 is online),
    ///     and every how many seconds; nil for no check.
    public func networkManagerConfiguration(dhcp: String, connectivityCheck: (uri: String, interval: Int)?) -> String {
        var text = """
            [main]
            plugins=keyfile
            dns=none
            rc-manager=unmanaged
            hostname-mode=none
            auth-polkit=false
            dhcp=\(dhcp)
            no-auto-default=*
            [keyfile]
            path=\(directory)/connections
            unmanaged-devices=except:interface-name:\(interface)

            """
        if let connectivityCheck {
            text += "[connectivity]\nuri=\(connectivityCheck.uri)\nresponse=\ninterval=\(connectivityCheck.interval)\n"
        }
        return text
    }

    /// An ethernet profile called `name` for `interface`, IPv4 by DHCP; to be written mode
    /// 0600, as NetworkManager ignores a profile others may read.
    public func profile(named name: String) -> String {
        """
        [connection]
        id=\(name)
        type=ethernet
        interface-name=\(interface)
        [ipv4]
        method=auto
        [ipv6]
        method=disabled
        """
    }

    /// dnsmasq.conf for the venue's end: leases of `leaseTime` (dnsmasq's notation: 2m, 1h),
    /// the venue as router and name server, every name its address, and DHCP option 114
    /// naming `captivePortalAPI` when there is one.
    public func dnsmasqConfiguration(leaseTime: String, captivePortalAPI: String?) -> String {
        """
        interface=\(venueInterface)
        bind-interfaces
        no-resolv
        no-hosts
        no-ping
        dhcp-range=198.18.0.100,198.18.0.150,255.255.255.0,\(leaseTime)
        dhcp-option=option:router,\(Self.venueAddress)
        dhcp-option=option:dns-server,\(Self.venueAddress)
        address=/#/\(Self.venueAddress)
        dhcp-leasefile=\(directory)/dnsmasq.leases

        """ + (captivePortalAPI.map { "dhcp-option=114,\"\($0)\"\n" } ?? "")
    }

    /// `sh -c`: the namespaces and the veth pair between them, the venue's end addressed,
    /// both up; stops at the first failure.
    public var namespacesScript: String {
        """
        set -e
        ip netns add \(venue); ip netns add \(client)
        ip link add \(venueInterface) netns \(venue) type veth peer name \(interface) netns \(client)
        ip -n \(venue) addr add \(Self.venueAddress)/24 dev \(venueInterface)
        ip -n \(venue) link set lo up; ip -n \(venue) link set \(venueInterface) up
        ip -n \(client) link set lo up; ip -n \(client) link set \(interface) up
        """
    }

    /// `sh -c` in the client namespace (`ip netns exec`, which gives it a mount namespace of
    /// its own): NetworkManager in the foreground with /sys read-only, else it waits for udev
    /// and leaves the device unmanaged, and its state directories in `directory`. A second
    /// start finds what the first left, as a restarted NetworkManager does.
    public var networkManagerScript: String {
        """
        mount -o remount,bind,ro /sys
        mkdir -p /run/NetworkManager
        mount --bind \(directory)/run /run/NetworkManager
        mount --bind \(directory)/varlib /var/lib/NetworkManager
        mount --bind \(directory)/etc /etc/NetworkManager
        exec /usr/sbin/NetworkManager --no-daemon --config=\(directory)/NetworkManager.conf --config-dir=\(directory)/conf.d \
          --system-config-dir=\(directory)/sysconf.d --intern-config=\(directory)/varlib/intern.conf \
          --state-file=\(directory)/varlib/NetworkManager.state --pid-file=\(directory)/run/nm.pid
        """
    }

    /// `sh -c`: every process still in the namespaces (dhclient outlives the NetworkManager
    /// that started it) ended by its id, then the namespaces deleted; never fails.
    public var removalScript: String {
        """
        for ns in \(client) \(venue); do for pid in $(ip netns pids $ns 2>/dev/null); do kill -9 $pid; done; done
        for ns in \(client) \(venue); do ip netns del $ns 2>/dev/null; done; true
        """
    }
}
