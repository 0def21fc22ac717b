import HotspotRuntime
import LuaSandbox
import Testing

/// A `hosts` entry that is no host pattern stops the script from loading, where it is
/// written, rather than leaving the script without that host.
@Test func anInvalidHostPatternIsRefusedAtLoadWithItsLine() async throws {
    let engine = try LuaEngine(HotspotRuntime.engineConfiguration())
    let script = """
        return {
          name = "Venue",
          hosts = { "bad pattern!" },
          evaluate = function(cmd) return "high" end,
        }
        """
    let loaded = await HelperScript.load(path: "venue.lua", text: script, into: engine)
    guard case .failure(let problems) = loaded else {
        Issue.record("the script loaded")
        return
    }
    #expect(problems.problems.map(\.description) == [
        "venue.lua:3: host pattern \"bad pattern!\" has a label that is not letters, digits and inner hyphens",
    ])
}
