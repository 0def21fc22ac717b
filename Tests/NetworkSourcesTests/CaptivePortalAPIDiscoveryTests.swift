import Testing
@testable import NetworkSources

@Suite("DHCP options 114 and 103 from the platform")
struct CaptivePortalAPIDiscoveryTests {
    @Test func option114IsReadFromEachPlatformSource() {
        #expect(CaptivePortalAPIDiscovery.fromNetworkManager(
            "domain_name_servers = 192.0.2.53 | captive_portal = https://api.venue.example/capport | ip_address = 192.0.2.7\n")
            == "https://api.venue.example/capport")
        #expect(CaptivePortalAPIDiscovery.fromNetworkManager("unknown_114 = https://a.example/\n") == "https://a.example/")
        #expect(CaptivePortalAPIDiscovery.fromNetworkManager("domain_name = example\n") == nil)
        #expect(CaptivePortalAPIDiscovery.fromNetworkdLease("ADDRESS=192.0.2.7\nCAPTIVE_PORTAL=https://b.example/api\n") == "https://b.example/api")
        let leases = """
            lease {
              interface "wlan0";
              option unknown-114 "https://old.example/";
            }
            lease {
              interface "eth0";
              option captive-portal "https://wired.example/";
            }
            lease {
              interface "wlan0";
              option unknown-114 68:74:74:70:73:3a:2f:2f:63:2e:65:78:2f;
            }
            """
        #expect(CaptivePortalAPIDiscovery.fromDhclientLeases(leases, interface: "wlan0") == "https://c.ex/")
        #expect(CaptivePortalAPIDiscovery.fromDhclientLeases(leases, interface: "eth0") == "https://wired.example/")
        #expect(CaptivePortalAPIDiscovery.fromDhclientLeases(leases, interface: "wlan1") == nil)
    }

    /// `dhclient -6` writes `lease6` blocks, with option 103 under the name dhclient.conf
    /// declares for it, or as an unknown option.
    @Test func option103IsReadFromDhclientsDHCPv6Leases() {
        let leases = """
            default-duid "\\000\\001";
            lease6 {
              interface "eth0";
              ia-na 1a:2b:3c:4d {
                iaaddr 2001:db8::17 {
                  max-life 7200;
                }
              }
              option dhcp6.name-servers 2001:db8::53;
              option dhcp6.captive-portal "https://v6.venue.example/capport";
            }
            lease6 {
              interface "wlan0";
              option dhcp6.unknown-103 68:74:74:70:73:3a:2f:2f:63:2e:65:78:2f;
            }
            """
        #expect(CaptivePortalAPIDiscovery.fromDhclientLeases(leases, interface: "eth0") == "https://v6.venue.example/capport")
        #expect(CaptivePortalAPIDiscovery.fromDhclientLeases(leases, interface: "wlan0") == "https://c.ex/")
    }
}
