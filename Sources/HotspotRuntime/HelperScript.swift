import FoundationEssentials
import LinuxFiles
public import LuaSandbox
public import HotspotCore
import ScriptContract

/// A venue script loaded as a helper.
public struct HelperScript: Sendable, Hashable {
    /// The file's base name without `.lua`: how events and the state directory name it.
    public let id: String
    public let path: String
    /// Shown beside the networks the helper claims (at most 15 characters).
    public let displayName: String
    public let hosts: [HostPattern]
    /// Whether `hosts` has `@portal`: the script may also reach the hosts the network names
    /// as its portal (the probe's redirect, the Captive Portal API, WISPr messages).
    public let followsPortal: Bool
    public let handlers: Set<HotspotCommand>
    /// The script's `ui`: what it asks a person when it answers `ui_required` without
    /// questions of its own.
    public let questions: PersonQuestions?
    /// The script's `networks`: chosen by it, never sent evaluate; nil when it declares none.
    public let declaredNetworks: NetworkDeclaration?
    /// Its Lua state: built at load, or for a declared helper when it is first sent a command.
    let state: HelperState

    public static let maximumDisplayNameLength = 15
    /// Far more than a venue script needs; a larger file is refused before it is read.
    public static let maximumSize = BoundedFile.mebibyte
    /// The `hosts` entry that lets a generic helper follow the network's portal.
    public static let portalHosts = "@portal"
}

/// A problem with a script, where it is.
public struct ScriptProblem: Error, Sendable, Equatable, CustomStringConvertible {
    /// `file:line` when the line is known, else the file.
    public let location: String
    public let message: String

    public var description: String { "\(location): \(message)" }
}

/// Every problem found in one script.
public struct ScriptProblems: Error, Sendable, Equatable {
    public let problems: [ScriptProblem]
}

extension HelperScript {
    /// The `.lua` files at `path`: the file itself, or those in the directory, sorted.
    public static func scriptPaths(at path: String) throws(ScriptProblem) -> [String] {
        var isDirectory = false
        guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) else {
            throw ScriptProblem(location: path, message: "no such file or directory")
        }
        guard isDirectory else { return [path] }
        let names = (try? FileManager.default.contentsOfDirectory(atPath: path)) ?? []
        return names.filter { $0.hasSuffix(".lua") }.sorted().map { path.pathAppending(component: $0) }
    }

    /// Loads `text`, read from the script at `path`, into `engine` and checks its contract:
    /// every problem is reported, with its line where the source shows it. The script runs
    /// once to be described; a helper that declares its networks keeps no state after that
    /// (see `HelperState`).
    public static func load(path: String, text: String, into engine: LuaEngine) async -> Result<HelperScript, ScriptProblems> {
        await loadDescribed(path: path, text: text, into: engine).result
    }

    /// `load`, with what the prelude described of the script when it ran (see
    /// `DescriptionCache`); nil when it did not get that far.
    static func loadDescribed(path: String, text: String, into engine: LuaEngine) async
        -> (result: Result<HelperScript, ScriptProblems>, described: LuaValue?) {
        let handle: ScriptHandle
        let description: CallOutcome
        let source = ScriptSource(path: path, text: text)
        do {
            // What the script returned, described by the prelude, in the load's round trip.
            (handle, description) = try await engine.load(source, thenCalling: ScriptNames.Entry.describe.rawValue)
        } catch {
            return (.failure(ScriptProblems(problems: [ScriptProblem(location: error.location.map { untruncated($0, path: path) } ?? path,
                                                                          message: messageWithoutLocation(error))])), nil)
        }
        let described: LuaValue
        do {
            described = try description.get().first ?? .nil
        } catch {
            engine.unload(handle)
            return (.failure(ScriptProblems(problems: [ScriptProblem(location: path, message: "cannot read what the script returned: \(error)")])), nil)
        }
        switch check(described, path: path, source: text) {
        case .success(let contract):
            let state: HelperState
            if contract.declaredNetworks != nil {
                engine.unload(handle)
                state = HelperState(buildingLaterFrom: source)
            } else {
                state = HelperState(built: handle)
            }
            return (.success(HelperScript(contract, path: path, state: state)), described)
        case .failure(let problems):
            engine.unload(handle)
            return (.failure(problems), described)
        }
    }

    /// The helper a script's earlier description makes, without running it: only a script
    /// that declares its networks, whose state is built later anyway; nil for any other, or
    /// when the description no longer passes the contract's check.
    static func declared(path: String, text: String, described: LuaValue) -> HelperScript? {
        guard case .success(let contract) = check(described, path: path, source: text), contract.declaredNetworks != nil else { return nil }
        return HelperScript(contract, path: path, state: HelperState(buildingLaterFrom: ScriptSource(path: path, text: text)))
    }

    private init(_ contract: Contract, path: String, state: HelperState) {
        self.init(id: path.pathLastComponent.pathDeletingExtension, path: path, displayName: contract.displayName, hosts: contract.hosts,
                  followsPortal: contract.followsPortal, handlers: contract.handlers, questions: contract.questions,
                  declaredNetworks: contract.declaredNetworks, state: state)
    }

    /// Lua shortens long chunk names to `...` and their end; the operator gets the whole path.
    static func untruncated(_ location: String, path: String) -> String {
        guard location.hasPrefix("..."), let colon = location.lastIndex(of: ":") else { return location }
        let tail = location[location.index(location.startIndex, offsetBy: 3)..<colon]
        return path.hasSuffix(tail) ? path + location[colon...] : location
    }

    private static func messageWithoutLocation(_ error: LuaScriptError) -> String {
        guard let location = error.location, error.message.hasPrefix(location + ": ") else { return error.message }
        return String(error.message.dropFirst(location.count + 2))
    }

    /// What a script's returned table says, once checked against the contract.
    struct Contract: Equatable {
        var displayName: String
        var hosts: [HostPattern]
        var followsPortal: Bool
        var handlers: Set<HotspotCommand>
        var questions: PersonQuestions?
        var declaredNetworks: NetworkDeclaration?
    }

    /// Checks the prelude's description of the returned table against the contract.
    static func check(_ described: LuaValue, path: String, source: String) -> Result<Contract, ScriptProblems> {
        typealias Described = ScriptNames.DescriptionKey
        typealias Field = ScriptNames.ScriptField
        let table = described.tableValue ?? LuaTable()
        func at(_ key: String) -> String { lineOf(key, in: source).map { "\(path):\($0)" } ?? path }
        func at(_ field: Field) -> String { at(field.rawValue) }
        guard table[Described.returned] == "table" else {
            let what = table[Described.returned].stringValue ?? "nothing"
            return .failure(ScriptProblems(problems: [ScriptProblem(
                location: lastReturnLine(in: source).map { "\(path):\($0)" } ?? path,
                message: "the script must return a table of handlers, not \(what == "nil" ? "nothing" : "a \(what) value")")]))
        }
        var problems: [ScriptProblem] = []
        let name = table[Described.name].stringValue ?? ""
        if table[Described.nameType] != "string" {
            problems.append(ScriptProblem(location: at(Field.name), message: "`\(Field.name.rawValue)` (the display name) must be a string"))
        } else if name.isEmpty || name.count > HelperScript.maximumDisplayNameLength {
            problems.append(ScriptProblem(location: at(Field.name),
                                          message: "the display name \"\(name)\" has \(name.count) characters; use 1 to \(HelperScript.maximumDisplayNameLength)"))
        }
        var hosts: [HostPattern] = []
        var followsPortal = false
        if table[Described.hostsType] != "table" {
            problems.append(ScriptProblem(location: at(Field.hosts), message: "`\(Field.hosts.rawValue)` must be a list of host names the script may reach, such as { \"portal.venue.example\", \"*.venue.example\" }"))
        } else {
            for entry in table[Described.hosts].tableValue?.array ?? [] {
                guard let text = entry.stringValue else {
                    problems.append(ScriptProblem(location: at(Field.hosts), message: "`\(Field.hosts.rawValue)` entries must be strings"))
                    continue
                }
                if text == HelperScript.portalHosts {
                    followsPortal = true
                    continue
                }
                switch HostPattern.parse(text) {
                case .success(let pattern): hosts.append(pattern)
                case .failure(let error): problems.append(ScriptProblem(location: at(Field.hosts), message: error.description))
                }
            }
        }
        var handlers: Set<HotspotCommand> = []
        for (key, value) in table[Described.handlers].tableValue?.entries ?? [:] {
            guard let name = key.stringValue, let command = HotspotCommand(rawValue: name) else { continue }
            if value == "function" {
                handlers.insert(command)
            } else {
                problems.append(ScriptProblem(location: at(name), message: "the handler `\(name)` must be a function, not a \(value.stringValue ?? "?")"))
            }
        }
        let fields = Field.allCases.map { "`\($0.rawValue)`" }
        for unknown in (table[Described.unknown].tableValue?.array ?? []).compactMap(\.stringValue).sorted() {
            let known = HotspotCommand.allCases.map(\.rawValue).joined(separator: ", ")
            problems.append(ScriptProblem(location: at(unknown), message: "unknown field `\(unknown)`; handlers are \(known), plus "
                + fields.dropLast().joined(separator: ", ") + " and " + fields.last!))
        }
        var questions: PersonQuestions?
        if !table[Described.ui].isNil {
            do throws(PersonQuestions.ReadingProblem) {
                questions = try PersonQuestions(lua: table[Described.ui], named: Field.ui.rawValue)
            } catch {
                problems.append(ScriptProblem(location: at(Field.ui), message: error.description))
            }
        }
        var declaredNetworks: NetworkDeclaration?
        if !table[Described.networks].isNil {
            do throws(NetworkDeclaration.ReadingProblem) {
                declaredNetworks = try NetworkDeclaration(lua: table[Described.networks])
            } catch {
                problems.append(ScriptProblem(location: at(Field.networks), message: error.description))
            }
            if handlers.contains(.evaluate) {
                problems.append(ScriptProblem(location: at("evaluate"), message: "a script that declares its `networks` is never asked "
                                              + "to evaluate; leave out `evaluate`, or `networks` to have it judge each network"))
            }
            if let declaredNetworks, !declaredNetworks.matchesScanLists, handlers.contains(.filterScanList) {
                problems.append(ScriptProblem(location: at(HotspotCommand.filterScanList.rawValue), message: "a script whose `networks` "
                                              + "name only portal hosts and gateway families is never sent filter_scan_list, since a scan "
                                              + "list shows no portal; declare the SSIDs it claims there, or leave out `filter_scan_list`"))
            }
        }
        guard problems.isEmpty else { return .failure(ScriptProblems(problems: problems)) }
        return .success(Contract(displayName: name, hosts: hosts, followsPortal: followsPortal, handlers: handlers, questions: questions,
                                 declaredNetworks: declaredNetworks))
    }

    /// The first line that assigns `key =` (a best effort: the line an operator looks at).
    static func lineOf(_ key: String, in source: String) -> Int? {
        for (index, line) in source.split(omittingEmptySubsequences: false, whereSeparator: endsLuaLine).enumerated() {
            guard let range = line.firstRange(of: key) else { continue }
            let before = line[..<range.lowerBound].last
            let after = line[range.upperBound...].drop { $0 == " " || $0 == "\t" }
            if before.map({ !($0.isLetter || $0.isNumber || $0 == "_") }) ?? true, after.hasPrefix("="), !after.hasPrefix("==") {
                return index + 1
            }
        }
        return nil
    }

    static func lastReturnLine(in source: String) -> Int? {
        let lines = source.split(omittingEmptySubsequences: false, whereSeparator: endsLuaLine)
        return lines.lastIndex { $0.trimmingWhitespace().hasPrefix("return") }.map { $0 + 1 }
    }
}

/// Whether Lua's lexer counts `character` as the end of a line (CRLF is one character).
private func endsLuaLine(_ character: Character) -> Bool {
    character == "\n" || character == "\r\n" || character == "\r"
}
