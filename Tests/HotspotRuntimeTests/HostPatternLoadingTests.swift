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

/// A script far larger than any venue's is refused before it is read (a 213 MB one took the
/// daemon to 1 GB).
@Test func aScriptOverItsSizeLimitIsRefusedUnread() async throws {
    let directory = RuntimeFixture.temporaryDirectory()
    let path = directory + "/huge.lua"
    try ("return {}\n--" + String(repeating: "x", count: HelperScript.maximumSize)).write(toFile: path, atomically: false, encoding: .utf8)
    let engine = try LuaEngine(HotspotRuntime.engineConfiguration())
    defer { engine.shutdown() }
    let (helpers, problems) = await HotspotRuntime.loadHelpers(at: directory, into: engine)
    #expect(helpers.isEmpty)
    #expect(problems.map(\.description) == ["\(path): the file is \(HelperScript.maximumSize + 12) bytes, over the limit of 1 MiB"])
}
