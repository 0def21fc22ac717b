import ArgumentParser
import HotspotCommandLine

/// The commands that run the portal simulator, which `hotspot-helper demo|dev|simulate`
/// starts in its place (see `DevTools`); named `hotspot-helper` in usage and help.
@main
struct DevToolsCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "hotspot-helper",
        abstract: "The portal simulator's commands of hotspot-helper: demo, dev, simulate, test and har.",
        subcommands: [Demo.self, Dev.self, Simulate.self, TestScripts.self, Har.self])

    static func main() async { await CommandLineEntry.run(Self.self) }
}
