import Foundation
import Testing
import TestSupport
@testable import HotspotSystem

@Suite("Paths and subprocesses without Foundation")
struct PathsAndSubprocessesTests {
    @Test(arguments: ["/a/b.lua", "/a/b/", "b.lua", "/b", "/", "", "a//b.lua", "/a/.hidden", "/a/b.tar.gz", "//a"])
    func pathComponentsAreNSStrings(_ path: String) {
        let reference = path as NSString
        #expect(path.pathLastComponent == reference.lastPathComponent)
        #expect(path.pathDeletingLastComponent == reference.deletingLastPathComponent)
        #expect(path.pathLastComponent.pathDeletingExtension == (reference.lastPathComponent as NSString).deletingPathExtension)
        #expect(path.pathAppending(component: "c.lua") == reference.appendingPathComponent("c.lua"))
    }

    @Test func aSubprocessGivesItsOutputAndExitStatus() throws {
        let printed = try #require(Subprocess.run("/bin/sh", ["-c", "echo out; echo err >&2; exit 3"]))
        #expect(printed.exitStatus == 3)
        #expect(String(decoding: printed.output, as: UTF8.self) == "out\n", "standard error is not the output")
        let killed = try #require(Subprocess.run("/bin/sh", ["-c", "kill -9 $$"]))
        #expect(killed.exitStatus == nil, "a signal is not an exit status")
        #expect(Subprocess.run("/nonexistent/program", []) == nil)
    }

    @Test func aSubprocessInheritsNoOtherDescriptor() throws {
        let leaked = open("/dev/null", O_RDONLY)
        defer { close(leaked) }
        let listed = try #require(Subprocess.run("/bin/ls", ["/proc/self/fd"]))
        let descriptors = String(decoding: listed.output, as: UTF8.self).split(separator: "\n").compactMap { Int32($0) }
        #expect(!descriptors.contains(leaked), "descriptors \(descriptors)")
        #expect(descriptors.allSatisfy { $0 <= 3 }, "the standard three, and ls's own directory")
    }
}

@Suite("DHCP option 114 from the platform")
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
}
