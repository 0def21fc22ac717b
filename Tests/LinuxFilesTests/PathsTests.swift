import Foundation
import Testing
@testable import LinuxFiles

@Suite("Paths without Foundation")
struct PathsTests {
    @Test(arguments: ["/a/b.lua", "/a/b/", "b.lua", "/b", "/", "", "a//b.lua", "/a/.hidden", "/a/b.tar.gz", "//a"])
    func pathComponentsAreNSStrings(_ path: String) {
        let reference = path as NSString
        #expect(path.pathLastComponent == reference.lastPathComponent)
        #expect(path.pathDeletingLastComponent == reference.deletingLastPathComponent)
        #expect(path.pathLastComponent.pathDeletingExtension == (reference.lastPathComponent as NSString).deletingPathExtension)
        #expect(path.pathAppending(component: "c.lua") == reference.appendingPathComponent("c.lua"))
    }
}
