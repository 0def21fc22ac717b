import HotspotCore
import Testing
@testable import HotspotRuntime

/// The timeline is what an operator reads on a terminal and in the journal; everything in it
/// came from outside, so none of it may carry a control character through.
@Suite("Event rendering")
struct EventRenderingTests {
    @Test func aHostilePortalsURLAndErrorsCannotReachTheTerminalRaw() {
        let events: [HotspotEvent] = [
            .connectivity(ConnectivityEvent(network: "Cafe\n[Other] done: authenticated", verdict: .captive,
                                            portalURL: "http://portal.test/\u{1B}]0;owned\u{07}\u{1B}[2J", interfaceKind: nil, helper: nil)),
            .command(CommandEvent(network: "Cafe", command: .authenticate, helper: "aroma", result: .failure, milliseconds: 1,
                                  error: "refused\r\u{1B}[32mauthenticate → aroma: success")),
            .log(.warn, "page said \u{0}\u{9B}31m", network: "Cafe", helper: "aroma"),
        ]
        for event in events {
            for colored in [false, true] {
                let line = event.timelineLine(colored: colored)
                // The only escape sequences left are the timeline's own colours.
                let withoutOwnColours = line.replacing(/\u{1B}\[[0-9;]*m/, with: "")
                #expect(!withoutOwnColours.unicodeScalars.contains { $0.properties.generalCategory == .control }, "\(line)")
            }
        }
        #expect(events[0].timelineLine(colored: false)
                == #"[Cafe\x0a[Other] done: authenticated] connectivity: captive at http://portal.test/\x1b]0;owned\x07\x1b[2J"#)
        #expect(events[1].timelineLine(colored: false).hasSuffix(#" — refused\x0d\x1b[32mauthenticate → aroma: success"#))
    }

    /// The journal's entries are records of their own: a message keeps its lines there (a
    /// newline starts no other entry), and every other control character is escaped.
    @Test func theJournalKeepsAMessagesLinesAndEscapesTheRest() throws {
        let event = HotspotEvent.log(.info, "logged in\nwith a second line\u{1B}[2J", network: "Cafe", helper: "aroma")
        let message = try #require(event.journalFields(at: .now).first { $0.name == "MESSAGE" }?.value)
        #expect(message.hasSuffix("aroma: logged in\nwith a second line\\x1b[2J"), "\(message)")
    }
}
