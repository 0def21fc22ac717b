import Foundation

/// One JSON line of `--json` output (docs/SCRIPTING.md's events: state, command, done, log,
/// connectivity, reload; `probe`'s verdict), as tests read it: every field any of them has,
/// nil where the line has none or null. Decoded by name, so a field renamed in the output
/// is a test that fails rather than a cast that quietly gives nil.
public struct EventLine: Decodable, Sendable, CustomStringConvertible {
    public let event: String?
    public let network: String?
    public let from: String?
    public let to: String?
    public let helper: String?
    public let command: String?
    public let result: String?
    public let confidence: String?
    public let error: String?
    public let ms: Double?
    public let state: String?
    public let level: String?
    public let message: String?
    public let verdict: String?
    public let portalURL: String?
    public let portalURLSource: String?
    public let interfaceKind: String?
    public let reason: String?
    public let added: [String]?
    public let reloaded: [String]?
    public let removed: [String]?
    public let problems: [String]?
    public let time: String?
    /// A reload's, when the helpers come from a signed catalog.
    public let catalogVersion: String?
    /// `probe`'s.
    public let details: [String]?
    /// `demo`'s last line: how many of its scenarios failed.
    public let failed: Int?
    /// The line as written, for a failure's message.
    public private(set) var description = ""
    /// The names the line has, null or not: the events' contract is their exact set.
    public private(set) var keys: Set<String> = []

    private enum CodingKeys: String, CodingKey {
        case event, network, from, to, helper, command, result, confidence, error, ms, state, level, message, verdict
        case portalURL = "portal_url", portalURLSource = "portal_url_source", interfaceKind = "interface_kind"
        case catalogVersion = "catalog_version"
        case reason, added, reloaded, removed, problems, time, details, failed
    }

    /// Every name of a JSON object, known to `EventLine` or not.
    private struct Names: Decodable {
        struct Name: CodingKey {
            let stringValue: String
            init(stringValue: String) { self.stringValue = stringValue }
            var intValue: Int? { nil }
            init?(intValue: Int) { nil }
        }

        let keys: Set<String>

        init(from decoder: any Decoder) throws {
            keys = Set(try decoder.container(keyedBy: Name.self).allKeys.map(\.stringValue))
        }
    }

    /// The JSON object lines of `output`, decoded; other lines (a table, a message) are skipped.
    public static func lines(in output: String) -> [EventLine] {
        let decoder = JSONDecoder()
        return output.split(separator: "\n").compactMap { line in
            guard line.hasPrefix("{"), var event = try? decoder.decode(EventLine.self, from: Data(line.utf8)),
                  let names = try? decoder.decode(Names.self, from: Data(line.utf8)) else { return nil }
            event.description = String(line)
            event.keys = names.keys
            return event
        }
    }
}
