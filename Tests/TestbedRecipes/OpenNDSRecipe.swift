/// A real openNDS gateway (Debian's `opennds`) as the tests run it on these machines, driven as
/// it runs on routers: three network namespaces joined by veth pairs.
///
///     client <prefix>c0 (DHCP) ── <prefix>g0 198.18.0.1 gateway <prefix>g1 198.18.1.2 ── <prefix>w0 198.18.1.1 internet
///
/// The gateway runs openNDS, its firewall holding each client until it authenticates, and
/// dnsmasq for DHCP (with option 114, which openNDS adds) and DNS (forwarded to the Internet
/// stand-in, whose resolver answers every name with its own address). What each step writes
/// and runs, named after a prefix so that testbeds side by side do not meet; starting the
/// processes, waiting for them and stopping them by their ids is the caller's.
public struct OpenNDSRecipe: Sendable {
    public static let gatewayAddress = "198.18.0.1"
    public static let internetAddress = "198.18.1.1"
    /// The port of openNDS's own web server: its splash pages and their forms.
    public static let gatewayPort = 2050

    /// The namespaces.
    public let client: String
    public let gateway: String
    public let internet: String
    /// The client's end of the LAN, the interface its DHCP client and the daemon use.
    public let interface: String
    /// The gateway's end of the LAN, the one openNDS manages, and its uplink.
    public let gatewayInterface: String
    public let uplink: String
    private let internetInterface: String
    /// Where the client's lease, resolv.conf and the gateway's files go (the caller's scratch directory).
    public let directory: String

    public init(prefix: String, directory: String) {
        client = prefix + "-cli"
        gateway = prefix + "-gw"
        internet = prefix + "-wan"
        interface = prefix + "c0"
        gatewayInterface = prefix + "g0"
        uplink = prefix + "g1"
        internetInterface = prefix + "w0"
        self.directory = directory
    }

    /// The themes openNDS ships: `login_option_enabled` 1 and 2 are the basic click-to-continue
    /// and name-and-email themes, 3 takes a themespec script (the custom-placeholder themes).
    public enum Theme: String, Sendable, CaseIterable, CustomStringConvertible {
        case clickToContinue = "theme_click-to-continue-basic.sh"
        case clickToContinueCustom = "theme_click-to-continue-custom-placeholders.sh"
        case userEmail = "theme_user-email-login-basic.sh"
        case userEmailCustom = "theme_user-email-login-custom-placeholders.sh"

        public var description: String { rawValue }

        /// Whether its splash asks the person for a name and an email address.
        public var asksForNameAndEmail: Bool { self == .userEmail || self == .userEmailCustom }

        var configuration: String {
            switch self {
            case .clickToContinue: "login_option_enabled 1\n"
            case .userEmail: "login_option_enabled 2\n"
            case .clickToContinueCustom, .userEmailCustom: "login_option_enabled 3\nthemespec_path /usr/lib/opennds/\(rawValue)\n"
            }
        }
    }

    /// `sh -c`: the namespaces, the veth pairs, addresses, the gateway's routes and forwarding;
    /// stops at the first failure.
    public var namespacesScript: String {
        """
        set -e
        for ns in \(internet) \(gateway) \(client); do ip netns add $ns; ip -n $ns link set lo up; done
        ip link add \(internetInterface) netns \(internet) type veth peer name \(uplink) netns \(gateway)
        ip link add \(gatewayInterface) netns \(gateway) type veth peer name \(interface) netns \(client)
        ip -n \(internet) addr add \(Self.internetAddress)/24 dev \(internetInterface)
        ip -n \(gateway) addr add 198.18.1.2/24 dev \(uplink)
        ip -n \(gateway) addr add \(Self.gatewayAddress)/24 dev \(gatewayInterface)
        ip -n \(internet) link set \(internetInterface) up
        ip -n \(gateway) link set \(uplink) up; ip -n \(gateway) link set \(gatewayInterface) up
        ip -n \(client) link set \(interface) up
        ip -n \(gateway) route add default via \(Self.internetAddress)
        ip netns exec \(gateway) sysctl -qw net.ipv4.ip_forward=1
        """
    }

    /// `sh -c` in the gateway namespace (`ip netns exec`, which gives it a mount namespace of
    /// its own): private `/tmp` and `/run` and an overlay over `/etc`, since openNDS rewrites
    /// `/etc/hosts` and `/etc/dnsmasq.conf` and keeps its socket and leases in `/tmp`;
    /// iptables-legacy first on its PATH (openNDS 9.10 fails with Debian's iptables-nft); a
    /// `systemctl` that restarts this dnsmasq, which openNDS's dnsconfig.sh asks systemd for
    /// to make its option-114 line take effect; then dnsmasq, and openNDS in the foreground.
    public func gatewayScript(theme: Theme, announcesCaptivePortalAPI: Bool = true) -> String {
        """
        set -e
        mount -t tmpfs tmpfs /tmp
        mount -t tmpfs tmpfs /run
        mkdir -p /run/etc-upper /run/etc-work /run/tmpfiles.d /run/bin /etc/opennds
        mount -t overlay overlay -o lowerdir=/etc,upperdir=/run/etc-upper,workdir=/run/etc-work /etc
        for tool in iptables iptables-save iptables-restore ip6tables ip6tables-save ip6tables-restore; do
          ln -s /usr/sbin/$(echo $tool | sed 's/tables/tables-legacy/') /run/bin/$tool
        done
        cat > /run/bin/systemctl <<'END'
        #!/bin/sh
        [ "$1 $2" = "restart dnsmasq" ] || exit 0
        pid=$(cat /run/dnsmasq.pid 2>/dev/null)
        # Polls on real time: dnsmasq is no child of this script, which cannot wait for it.
        if [ -n "$pid" ]; then kill $pid; while [ -e /proc/$pid ]; do sleep 0.05; done; fi
        exec /usr/sbin/dnsmasq --conf-file=/etc/dnsmasq.conf --pid-file=/run/dnsmasq.pid
        END
        chmod +x /run/bin/systemctl
        cat > /etc/dnsmasq.conf <<'END'
        \(dnsmasqConfiguration)END
        cat > /etc/opennds/opennds.conf <<'END'
        \(openNDSConfiguration(theme: theme, announcesCaptivePortalAPI: announcesCaptivePortalAPI))END
        export PATH=/run/bin:$PATH
        iptables -t nat -A POSTROUTING -o \(uplink) -j MASQUERADE
        /usr/sbin/dnsmasq --conf-file=/etc/dnsmasq.conf --pid-file=/run/dnsmasq.pid
        exec /usr/bin/opennds -f
        """
    }

    /// The gateway's dnsmasq: DHCP on the LAN with the gateway as router and name server,
    /// names forwarded to the Internet stand-in, the leases where openNDS looks for them.
    var dnsmasqConfiguration: String {
        """
        interface=\(gatewayInterface)
        bind-interfaces
        no-resolv
        server=\(Self.internetAddress)
        dhcp-range=198.18.0.100,198.18.0.150,255.255.255.0,10m
        dhcp-option=option:router,\(Self.gatewayAddress)
        dhcp-option=option:dns-server,\(Self.gatewayAddress)
        dhcp-leasefile=/tmp/dhcp.leases

        """
    }

    /// openNDS's legacy configuration file (the one Debian's libopennds.sh reads): the LAN
    /// managed, the theme, option 114 announcing its Captive Portal API (`http://status.client`)
    /// or not, and the client allowed DNS, DHCP and the splash's web server on the gateway.
    func openNDSConfiguration(theme: Theme, announcesCaptivePortalAPI: Bool) -> String {
        """
        GatewayInterface \(gatewayInterface)
        \(theme.configuration)dhcp_default_url_enable \(announcesCaptivePortalAPI ? 1 : 0)
        FirewallRuleSet authenticated-users {
        }
        FirewallRuleSet preauthenticated-users {
        }
        FirewallRuleSet users-to-router {
            FirewallRule allow udp port 53
            FirewallRule allow tcp port 53
            FirewallRule allow udp port 67
            FirewallRule allow tcp port 80
        }

        """
    }

    /// dhclient.conf: option 114 asked for, as a user configures it (docs/GETTING-STARTED.md).
    public var dhclientConfiguration: String { "also request default-url;\n" }

    /// A command in the client namespace, in a mount namespace where `/var/lib/dhcp` (where
    /// the daemon looks for dhclient's lease and its option 114) and `/etc/resolv.conf` are
    /// the testbed's, so the machine's stay as they are.
    public func inClient(_ command: [String]) -> [String] {
        ["/usr/sbin/ip", "netns", "exec", client, "/bin/sh", "-c",
         "mount --bind \(directory)/dhcp /var/lib/dhcp && mount --bind \(directory)/resolv.conf /etc/resolv.conf && exec \"$@\"",
         "sh"] + command
    }

    /// The files `inClient` binds, to be made before it runs.
    public var clientFiles: (folder: String, file: String) { ("\(directory)/dhcp", "\(directory)/resolv.conf") }

    /// dhclient in the client namespace: one lease (option 114 asked for), then it keeps it in the background.
    public var dhclient: [String] {
        inClient(["/sbin/dhclient", "-1", "-cf", "\(directory)/dhclient.conf", "-pf", "\(directory)/dhclient.pid",
                  "-lf", "/var/lib/dhcp/dhclient.leases", interface])
    }

    /// `ndsctl ARGUMENTS` as openNDS's own tool, in the gateway's namespaces (its socket is in
    /// the gateway's private `/tmp`), given openNDS's process id.
    public func ndsctl(openNDS pid: Int32, _ arguments: [String]) -> [String] {
        ["/usr/bin/nsenter", "--target", "\(pid)", "--mount", "--net", "/usr/bin/ndsctl"] + arguments
    }

    /// `sh -c`: every process still in the namespaces ended by its id, then the namespaces
    /// deleted; never fails.
    public var removalScript: String {
        """
        for ns in \(client) \(gateway) \(internet); do for pid in $(ip netns pids $ns 2>/dev/null); do kill -9 $pid; done; done
        for ns in \(client) \(gateway) \(internet); do ip netns del $ns 2>/dev/null; done; true
        """
    }
}
