import Foundation
import HotspotCore
@testable import HotspotRuntime
import LuaSandbox
import Synchronization
import Testing

/// A catalog as a fleet's build would make it: scripts, a manifest, and the manifest signed
/// with the real `minisign` (Debian's), whose keys and signatures the runtime verifies.
struct CatalogMaker {
    let root: String
    let keys: String

    init() throws {
        root = try scratchDirectory("catalog")
        keys = root + "/keys"
        try FileManager.default.createDirectory(atPath: keys, withIntermediateDirectories: false)
        for name in ["fleet", "stranger"] {
            try Self.run("minisign -G -W -p \(keys)/\(name).pub -s \(keys)/\(name).key")
        }
    }

    static func run(_ command: String) throws {
        let status = try shellStatus(command)
        guard status == 0 else { throw CatalogMakerError(command: command, status: status) }
    }

    struct CatalogMakerError: Error {
        let command: String
        let status: Int32
    }

    static func script(_ name: String, ssid: String) -> String {
        """
        return {
          name = "\(name)",
          hosts = { "login.\(name.lowercased()).example" },
          networks = { ssids = { "\(ssid)" } },
          authenticate = function(cmd) return "success" end,
        }

        """
    }

    /// Writes version `version` of the catalog into `directory` (made), signed by `key`.
    @discardableResult
    func make(_ directory: String, version: String, scripts: [String: String], key: String = "fleet",
              manifest: ((String) -> String)? = nil) throws -> String {
        let path = root + "/" + directory
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        var entries: [String] = []
        for (name, text) in scripts.sorted(by: { $0.key < $1.key }) {
            try text.write(toFile: "\(path)/\(name).lua", atomically: false, encoding: .utf8)
            let digest = SignedCatalog.hex(SignedCatalog.sha256(Array(text.utf8)))
            let ssid = text.firstMatch(of: /ssids = \{ "([^"]*)"/).map { String($0.1) } ?? ""
            entries.append(#"{"name": "\#(name)", "version": "1", "sha256": "\#(digest)", "hosts": ["login.\#(name).example"], "networks": {"ssids": ["\#(ssid)"]}}"#)
        }
        let text = #"{"version": "\#(version)", "helpers": [\#(entries.joined(separator: ", "))]}"#
        try (manifest?(text) ?? text).write(toFile: "\(path)/manifest.json", atomically: false, encoding: .utf8)
        try Self.run("minisign -S -s \(keys)/\(key).key -m \(path)/manifest.json -t 'catalog \(version)'")
        return path
    }

    var trust: CatalogTrust { try! CatalogTrust.load(path: keys + "/fleet.pub") }
}

@Suite struct SignedCatalogTests {
    static let campus = CatalogMaker.script("Campus", ssid: "Campus Guest")
    static let library = CatalogMaker.script("Library", ssid: "Library")

    @Test func aSignedCatalogVerifies() async throws {
        try await onOwnThread {
            let maker = try CatalogMaker()
            let path = try maker.make("v1", version: "2026.11.1", scripts: ["campus": Self.campus, "library": Self.library])
            let verified = try SignedCatalog.verify(directory: path, trust: maker.trust)
            #expect(verified.version == "2026.11.1")
            #expect(verified.scripts.map(\.entry.name) == ["campus", "library"])
            #expect(verified.scripts.first?.entry.declaredNetworks == NetworkDeclaration(ssids: ["Campus Guest"]))
            #expect(verified.refused.isEmpty)
        }
    }

    @Test func oneByteOfAScriptChangedRefusesThatScriptAlone() async throws {
        try await onOwnThread {
            let maker = try CatalogMaker()
            let path = try maker.make("v1", version: "1", scripts: ["campus": Self.campus, "library": Self.library])
            try Self.campus.replacing("success", with: "succesS").write(toFile: path + "/campus.lua", atomically: false, encoding: .utf8)
            let verified = try SignedCatalog.verify(directory: path, trust: maker.trust)
            #expect(verified.scripts.map(\.entry.name) == ["library"])
            #expect(verified.refused.count == 1)
            #expect(verified.refused.first?.location == path + "/campus.lua")
            #expect(verified.refused.first?.message.hasPrefix("its SHA-256 is ") == true)
            #expect(verified.refused.first?.message.contains(", the signed manifest says ") == true)
        }
    }

    @Test func aChangedManifestOrSignatureRefusesTheCatalog() async throws {
        try await onOwnThread {
            let maker = try CatalogMaker()
            let path = try maker.make("v1", version: "1", scripts: ["campus": Self.campus])
            let manifest = try String(contentsOfFile: path + "/manifest.json", encoding: .utf8)
            try manifest.replacing("\"1\"", with: "\"2\"").write(toFile: path + "/manifest.json", atomically: false, encoding: .utf8)
            #expect(throws: CatalogProblem.self) { try SignedCatalog.verify(directory: path, trust: maker.trust) }
            do {
                _ = try SignedCatalog.verify(directory: path, trust: maker.trust)
            } catch let problem as CatalogProblem {
                #expect(problem.description.contains("does not match the manifest; refused"))
            }

            try maker.make("v2", version: "2", scripts: ["campus": Self.campus])
            let signature = maker.root + "/v2/manifest.json.minisig"
            var lines = try String(contentsOfFile: signature, encoding: .utf8).split(separator: "\n").map(String.init)
            lines[2] = "trusted comment: catalog 3"  // the comment is signed too
            try (lines.joined(separator: "\n") + "\n").write(toFile: signature, atomically: false, encoding: .utf8)
            #expect(problem(maker.root + "/v2", maker.trust).contains("the signature's trusted comment was altered; refused"))

            lines = try String(contentsOfFile: signature, encoding: .utf8).split(separator: "\n").map(String.init)
            var signed = Array(Data(base64Encoded: lines[1])!)
            signed[20] ^= 1
            lines[1] = Data(signed).base64EncodedString()
            try (lines.joined(separator: "\n") + "\n").write(toFile: signature, atomically: false, encoding: .utf8)
            #expect(problem(maker.root + "/v2", maker.trust).contains("does not match the manifest; refused"))
        }
    }

    @Test func aKeyThatIsNotTrustedIsRefused() async throws {
        try await onOwnThread {
            let maker = try CatalogMaker()
            let path = try maker.make("v1", version: "1", scripts: ["campus": Self.campus], key: "stranger")
            let message = problem(path, maker.trust)
            #expect(message.contains("signed with the key "), "\(message)")
            #expect(message.contains("which the trusted keys do not hold"), "\(message)")
        }
    }

    @Test(arguments: [
        (#"{"helpers": []}"#, "no \"version\" string of 1 to 64 bytes"),
        (#"{"version": "1", "helpers": [{"name": "../x", "version": "1"}]}"#, "helper 1 has no \"name\""),
        (#"{"version": "1", "helpers": [{"name": "a", "version": "1", "sha256": "00"}]}"#, "a has no \"sha256\" of 64 hexadecimal digits"),
        ("not json", "not JSON"),
    ])
    func anInvalidManifestIsRefused(_ manifest: String, _ expected: String) async throws {
        try await onOwnThread {
            let maker = try CatalogMaker()
            let path = try maker.make("v1", version: "1", scripts: [:]) { _ in manifest }
            let message = problem(path, maker.trust)
            #expect(message.contains(expected), "\(message)")
        }
    }

    @Test func duplicateNamesRefuseTheCatalog() async throws {
        try await onOwnThread {
            let maker = try CatalogMaker()
            let path = try maker.make("v1", version: "1", scripts: ["campus": Self.campus]) { text in
                text.dropLast(2) + ", " + text.firstMatch(of: /\{"name".*\}\}/)!.0 + "]}"
            }
            #expect(problem(path, maker.trust).hasSuffix("manifest.json: lists the helper campus twice"))
        }
    }

    /// Empty entries: the count is checked before any entry is read, and ten megabytes of
    /// full ones would be seconds of a debug build's parsing beside the other suites.
    @Test func aHundredThousandEntriesAreRefusedByCount() async throws {
        try await onOwnThread {
            let maker = try CatalogMaker()
            let path = try maker.make("v1", version: "1", scripts: [:]) { _ in
                #"{"version": "1", "helpers": ["# + Array(repeating: "{}", count: 100_000).joined(separator: ",") + "]}"
            }
            #expect(problem(path, maker.trust).hasSuffix("manifest.json: lists 100000 helpers; a catalog holds at most 20000"))
        }
    }

    /// Refused by its size before a byte is read or its signature checked.
    @Test func aHundredMegabyteManifestIsRefusedUnread() async throws {
        try await onOwnThread {
            let maker = try CatalogMaker()
            let path = try maker.make("v1", version: "1", scripts: [:])
            try Self.run("truncate -s 100M \(path)/manifest.json")
            #expect(problem(path, maker.trust) == "\(path)/manifest.json: the file is 104857600 bytes, over the limit of 16 MiB")
        }
    }

    @Test func aSymbolicLinkLeavingTheCatalogIsRefused() async throws {
        try await onOwnThread {
            let maker = try CatalogMaker()
            let path = try maker.make("v1", version: "1", scripts: ["campus": Self.campus, "library": Self.library])
            try Self.library.write(toFile: maker.root + "/outside.lua", atomically: false, encoding: .utf8)
            try FileManager.default.removeItem(atPath: path + "/library.lua")
            try FileManager.default.createSymbolicLink(atPath: path + "/library.lua", withDestinationPath: "../outside.lua")
            try "return {}".write(toFile: path + "/stray.lua", atomically: false, encoding: .utf8)
            let verified = try SignedCatalog.verify(directory: path, trust: maker.trust)
            #expect(verified.scripts.map(\.entry.name) == ["campus"])
            #expect(verified.refused.map(\.description) == [
                "\(path)/library.lua: a symbolic link; a catalog holds its scripts itself",
                "\(path)/stray.lua: not in the signed manifest; refused",
            ])
        }
    }

    /// The running catalog is replaced the way fleets replace directories: a symbolic link
    /// swapped atomically (rename). A good version is taken whole; a bad one leaves the last
    /// good version running, and a version whose script does not verify is not taken in part.
    @Test func aReplacedCatalogIsTakenWholeOrTheLastGoodKept() async throws {
        let maker = try await onOwnThread { try CatalogMaker() }
        let current = maker.root + "/current"
        try await onOwnThread {
            try maker.make("v1", version: "1", scripts: ["campus": Self.campus])
            try FileManager.default.createSymbolicLink(atPath: current, withDestinationPath: "v1")
        }
        let engine = try LuaEngine(HotspotRuntime.engineConfiguration())
        defer { engine.shutdown() }
        let catalog = HelperCatalog(path: current, engine: engine, retirementDelay: .zero, trust: maker.trust)
        let first = await catalog.refresh()
        #expect(first.added == ["campus"] && first.catalogVersion == "1" && first.problems.isEmpty, "\(first)")

        @Sendable func swap(to version: String) throws {
            try FileManager.default.createSymbolicLink(atPath: current + ".new", withDestinationPath: version)
            try Self.run("mv -T \(current).new \(current)")
        }
        // Version 2 changes campus and adds library; taken whole.
        try await onOwnThread {
            try maker.make("v2", version: "2", scripts: ["campus": Self.campus.replacing("Campus Guest", with: "Campus-2"),
                                                          "library": Self.library])
            try swap(to: "v2")
        }
        let second = await catalog.refresh()
        #expect(second.catalogVersion == "2" && second.added == ["library"] && second.reloaded == ["campus"], "\(second)")
        #expect(await catalog.helpers.first?.declaredNetworks == NetworkDeclaration(ssids: ["Campus-2"]))

        // Version 3 has a tampered library: refused whole, version 2 keeps running.
        try await onOwnThread {
            let path = try maker.make("v3", version: "3", scripts: ["campus": Self.campus, "library": Self.library])
            try "return {}".write(toFile: path + "/library.lua", atomically: false, encoding: .utf8)
            try swap(to: "v3")
        }
        let third = await catalog.refresh()
        #expect(third.catalogVersion == nil && third.added.isEmpty && third.reloaded.isEmpty, "\(third)")
        #expect(third.problems.last?.message == "the catalog version 3 is refused; the catalog version 2 keeps running")
        #expect(await catalog.catalogVersion == "2")
        #expect(await catalog.helpers.first?.declaredNetworks == NetworkDeclaration(ssids: ["Campus-2"]))

        // Version 4 is signed by a stranger: refused, version 2 keeps running.
        try await onOwnThread {
            try maker.make("v4", version: "4", scripts: ["campus": Self.campus], key: "stranger")
            try swap(to: "v4")
        }
        let fourth = await catalog.refresh()
        #expect(fourth.problems.first?.message.hasSuffix("; the catalog version 2 keeps running") == true, "\(fourth)")
        #expect(await catalog.helpers.map(\.id) == ["campus", "library"])

        // Rolled back to version 1 on purpose: a good, signed version, taken.
        try await onOwnThread { try swap(to: "v1") }
        let back = await catalog.refresh()
        #expect(back.catalogVersion == "1" && back.removed == ["library"] && back.problems.isEmpty, "\(back)")
    }

    /// The issue's bad input, each arriving as a new version of a running catalog: each is
    /// refused saying why, the running version and its helpers stay as they were, and none is
    /// read past its bound (16 MiB of manifest, 20,000 helpers, 128 MiB of scripts, each at
    /// most 1 MiB: sizes checked before anything is read).
    enum BadVersion: String, CaseIterable, Sendable {
        case hundredThousandEntries, hundredMegabyteManifest, duplicateNames, declarationMatchingEverySSID
        case symbolicLinkLeavingTheCatalog, scriptsOverTheirBound, helperFailingToLoad, manifestNewerThanItsScripts
    }

    @Test(arguments: BadVersion.allCases)
    func aBadNewVersionLeavesTheLastGoodOneRunning(_ bad: BadVersion) async throws {
        let maker = try await onOwnThread { try CatalogMaker() }
        let current = maker.root + "/current"
        try await onOwnThread {
            try maker.make("v1", version: "1", scripts: ["campus": Self.campus, "library": Self.library])
            try FileManager.default.createSymbolicLink(atPath: current, withDestinationPath: "v1")
        }
        let engine = try LuaEngine(HotspotRuntime.engineConfiguration())
        defer { engine.shutdown() }
        let catalog = HelperCatalog(path: current, engine: engine, retirementDelay: .zero, trust: maker.trust)
        #expect(await catalog.refresh().catalogVersion == "1")
        let running = await catalog.helpers

        let expected: String = try await onOwnThread {
            let v2 = maker.root + "/v2"
            let scripts = ["campus": Self.campus, "library": Self.library]
            switch bad {
            case .hundredThousandEntries:
                try maker.make("v2", version: "2", scripts: scripts) { _ in
                    #"{"version": "2", "helpers": ["# + Array(repeating: "{}", count: 100_000).joined(separator: ",") + "]}"
                }
                return "\(current)/manifest.json: lists 100000 helpers; a catalog holds at most 20000; the catalog version 1 keeps running"
            case .hundredMegabyteManifest:
                try maker.make("v2", version: "2", scripts: scripts)
                try Self.run("truncate -s 100M \(v2)/manifest.json")
                return "\(current)/manifest.json: the file is 104857600 bytes, over the limit of 16 MiB; the catalog version 1 keeps running"
            case .duplicateNames:
                try maker.make("v2", version: "2", scripts: scripts) { text in
                    text.dropLast(2) + ", " + text.firstMatch(of: /\{"name": "campus".*?\}\}/)!.0 + "]}"
                }
                return "\(current)/manifest.json: lists the helper campus twice; the catalog version 1 keeps running"
            case .declarationMatchingEverySSID:
                let everywhere = Self.campus.replacing(#"ssids = { "Campus Guest" }"#, with: #"ssid_patterns = { "*" }"#)
                try maker.make("v2", version: "2", scripts: ["campus": everywhere]) { text in
                    text.replacing(#""ssids": [""]"#, with: #""ssid_patterns": ["*"]"#)
                }
                return "\(current)/manifest.json: campus: `networks.ssid_patterns`: the SSID pattern \"*\" matches every SSID; "
                    + "declare the venue's own names, or leave the choice to `evaluate`; the catalog version 1 keeps running"
            case .symbolicLinkLeavingTheCatalog:
                try maker.make("v2", version: "2", scripts: scripts)
                try Self.library.write(toFile: maker.root + "/outside.lua", atomically: false, encoding: .utf8)
                try FileManager.default.removeItem(atPath: v2 + "/library.lua")
                try FileManager.default.createSymbolicLink(atPath: v2 + "/library.lua", withDestinationPath: "../outside.lua")
                return "the catalog version 2 is refused; the catalog version 1 keeps running"
            case .scriptsOverTheirBound:
                // 129 scripts of 1 MiB, sparse: refused by their sizes before one is read.
                let names = (0..<129).map { "venue\($0)" }
                try maker.make("v2", version: "2", scripts: [:]) { _ in
                    #"{"version": "2", "helpers": ["# + names.map {
                        #"{"name": "\#($0)", "version": "1", "sha256": "\#(String(repeating: "0", count: 64))", "hosts": []}"#
                    }.joined(separator: ", ") + "]}"
                }
                try Self.run("cd \(v2) && for name in \(names.joined(separator: " ")); do truncate -s 1M $name.lua; done")
                return "\(current): its scripts come to more than 128 MiB, the most a catalog may hold; split it, or make its scripts smaller; "
                    + "the catalog version 1 keeps running"
            case .helperFailingToLoad:
                try maker.make("v2", version: "2", scripts: ["campus": Self.campus, "library": Self.library.replacing("return {", with: "return {{")])
                return "the catalog version 2 is refused; the catalog version 1 keeps running"
            case .manifestNewerThanItsScripts:
                // Rewritten in place (rsync without --delay-updates), read halfway: the new
                // manifest over the old scripts.
                try maker.make("v2", version: "2", scripts: ["campus": Self.campus.replacing("Campus Guest", with: "Campus-2"), "library": Self.library])
                try Self.campus.write(toFile: v2 + "/campus.lua", atomically: false, encoding: .utf8)
                return "the catalog version 2 is refused; the catalog version 1 keeps running"
            }
        }
        try await onOwnThread {
            try FileManager.default.createSymbolicLink(atPath: current + ".new", withDestinationPath: "v2")
            try Self.run("mv -T \(current).new \(current)")
        }
        let change = await catalog.refresh()
        #expect(change.problems.last?.description.hasSuffix(expected) == true, "\(change.problems)")
        #expect(change.catalogVersion == nil && !change.changesHelpers, "\(change)")
        #expect(await catalog.catalogVersion == "1")
        #expect(await catalog.helpers == running)
    }

    /// A catalog swapped (a symbolic link renamed over) again and again while it is verified:
    /// every read is one version whole, its manifest and scripts alike, never a mixture.
    @Test func aCatalogReplacedWhileBeingReadIsReadWholeFromOneVersion() async throws {
        let maker = try await onOwnThread { try CatalogMaker() }
        let current = maker.root + "/current"
        try await onOwnThread {
            try maker.make("v1", version: "1", scripts: ["campus": Self.campus, "library": Self.library])
            try maker.make("v2", version: "2", scripts: ["campus": Self.campus.replacing("Campus Guest", with: "Campus-2"), "library": Self.library])
            try FileManager.default.createSymbolicLink(atPath: current, withDestinationPath: "v1")
        }
        // Both on threads of their own: a task swapping until cancelled would hold one of Swift
        // concurrency's two threads here for the whole test.
        let verified = Flag()
        async let swapping = onOwnThread {
            var swaps = 0
            while !verified.isSet.load(ordering: .relaxed) {
                swaps += 1
                try? FileManager.default.createSymbolicLink(atPath: current + ".new", withDestinationPath: swaps % 2 == 0 ? "v1" : "v2")
                _ = rename(current + ".new", current)
                usleep(200)  // a swap every fraction of a millisecond, without spinning a core the other suites share
            }
            return swaps
        }
        let trust = maker.trust
        let versions = try await onOwnThread {
            defer { verified.isSet.store(true, ordering: .relaxed) }
            return try (0..<200).map { _ in
                let verified = try SignedCatalog.verify(directory: current, trust: trust)
                let ssid = verified.scripts.first { $0.entry.name == "campus" }?.text.firstMatch(of: /ssids = \{ "([^"]*)"/).map { String($0.1) }
                return "\(verified.version) \(ssid ?? "-") \(verified.scripts.count) \(verified.refused.count)"
            }
        }
        #expect(try await swapping > 1)
        #expect(Set(versions).isSubset(of: ["1 Campus Guest 2 0", "2 Campus-2 2 0"]), "\(Set(versions))")
    }

    private func problem(_ path: String, _ trust: CatalogTrust) -> String {
        do {
            _ = try SignedCatalog.verify(directory: path, trust: trust)
            return "verified"
        } catch {
            return error.description
        }
    }

    private static func run(_ command: String) throws { try CatalogMaker.run(command) }

    /// Set once, read by another thread.
    final class Flag: Sendable {
        let isSet = Atomic(false)
    }
}
