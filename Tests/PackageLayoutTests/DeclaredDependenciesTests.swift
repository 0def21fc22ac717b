import Foundation
import Testing
import TestSupport

/// Every edge of the module graph is in Package.swift: a module imports only what its target
/// declares, and a test target declares every executable it starts. SwiftPM does not check
/// this (a module built earlier in the same build can be imported undeclared, and then breaks
/// when the build order changes), so this test does, from the manifest as SwiftPM reads it.
@Suite("Package.swift declares every edge")
struct DeclaredDependenciesTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    /// Modules of the platform and the toolchain, which no manifest declares.
    static let platformModules: Set<String> = [
        "Glibc", "Foundation", "FoundationEssentials", "FoundationXML", "Dispatch", "Synchronization", "_Concurrency", "Testing",
    ]

    struct Target: Sendable {
        let name: String
        let path: String
        let type: String
        /// Target names and product names (a product of a package is the module of its name).
        let dependencies: Set<String>
    }

    /// The manifest's targets, read on a thread of the test's own (SwiftPM takes a second or two).
    static func targets() async throws -> [Target] { try await onOwnThread(readManifest) }

    /// The manifest as SwiftPM reads it (`swift package dump-package`, in a scratch folder of its
    /// own so it does not wait for the build that runs the tests).
    private static func readManifest() throws -> [Target] {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        let scratch = FileManager.default.temporaryDirectory.appendingPathComponent("dump-package-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: scratch) }
        process.arguments = ["swift", "package", "--package-path", root.path, "--scratch-path", scratch.path, "dump-package"]
        let output = Pipe()
        process.standardOutput = output
        try process.run()
        let data = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        try #require(process.terminationStatus == 0, "swift package dump-package failed")
        let manifest = try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
        let targets = try #require(manifest["targets"] as? [[String: Any]])
        return targets.map { target in
            let name = target["name"] as! String
            let type = target["type"] as! String
            let defaultFolder = type == "test" ? "Tests/" : "Sources/"
            var dependencies: Set<String> = []
            for dependency in target["dependencies"] as? [[String: Any]] ?? [] {
                for kind in ["byName", "target", "product"] {
                    if let values = dependency[kind] as? [Any], let first = values.first as? String { dependencies.insert(first) }
                }
            }
            for plugin in target["pluginUsages"] as? [[String: Any]] ?? [] {
                if let values = plugin["plugin"] as? [Any], let first = values.first as? String { dependencies.insert(first) }
            }
            return Target(name: name, path: target["path"] as? String ?? defaultFolder + name, type: type, dependencies: dependencies)
        }
    }

    static func swiftFiles(in folder: URL) -> [URL] {
        guard let walk = FileManager.default.enumerator(at: folder, includingPropertiesForKeys: nil) else { return [] }
        return walk.compactMap { $0 as? URL }.filter { $0.pathExtension == "swift" }
    }

    static let importLine = try! NSRegularExpression(
        pattern: #"^(?:@[A-Za-z_]+(?:\([^)]*\))? )*(?:(?:public|package|internal) )?import ([A-Za-z_][A-Za-z0-9_]*)\s*$"#,
        options: .anchorsMatchLines)

    @Test func everyImportedModuleIsDeclared() async throws {
        let targets = try await Self.targets()
        #expect(targets.count > 40, "the manifest read")
        var undeclared: [String] = []
        for target in targets where target.type != "system-target" && target.type != "plugin" {
            for file in Self.swiftFiles(in: Self.root.appendingPathComponent(target.path)) {
                let text = try String(contentsOf: file, encoding: .utf8)
                for match in Self.importLine.matches(in: text, range: NSRange(text.startIndex..., in: text)) {
                    let module = String(text[Range(match.range(at: 1), in: text)!])
                    if module == target.name || Self.platformModules.contains(module) || target.dependencies.contains(module) { continue }
                    undeclared.append("\(target.name) imports \(module) (\(file.lastPathComponent))")
                }
            }
        }
        #expect(undeclared.isEmpty, "declare these in Package.swift: \(undeclared.joined(separator: "; "))")
    }

    @Test func everyExecutableATestStartsIsDeclared() async throws {
        let targets = try await Self.targets()
        let executables = Set(targets.filter { $0.type == "executable" }.map(\.name))
        #expect(executables.contains("hotspot-helper"))
        let named = try NSRegularExpression(pattern: #"executableBesideCurrent\(named: "([^"]+)"\)"#)
        var undeclared: [String] = []
        for target in targets where target.type == "test" {
            for file in Self.swiftFiles(in: Self.root.appendingPathComponent(target.path)) {
                let text = try String(contentsOf: file, encoding: .utf8)
                for match in named.matches(in: text, range: NSRange(text.startIndex..., in: text)) {
                    let executable = String(text[Range(match.range(at: 1), in: text)!])
                    if executables.contains(executable) && !target.dependencies.contains(executable) {
                        undeclared.append("\(target.name) starts \(executable) (\(file.lastPathComponent))")
                    }
                }
            }
        }
        #expect(undeclared.isEmpty, "declare these in Package.swift: \(undeclared.joined(separator: "; "))")
    }
}

/// docs/ARCHITECTURE.md's module table is the manifest in words: a row for every target but
/// the tests, naming what the target depends on, no more, no less.
@Suite("The module table matches Package.swift")
struct ModuleTableTests {
    @Test func everyTargetHasARowListingItsDependencies() async throws {
        let targets = try await DeclaredDependenciesTests.targets()
        let document = try String(contentsOf: DeclaredDependenciesTests.root.appendingPathComponent("docs/ARCHITECTURE.md"), encoding: .utf8)
        let table = try #require(document.range(of: "## Modules").flatMap { start in
            document.range(of: "\n## ", range: start.upperBound..<document.endIndex).map { document[start.upperBound..<$0.lowerBound] }
        })
        let code = try NSRegularExpression(pattern: "`([A-Za-z0-9_-]+)`")
        let word = try NSRegularExpression(pattern: "[A-Za-z][A-Za-z0-9_-]*")
        func matches(_ pattern: NSRegularExpression, _ text: Substring, group: Int) -> [String] {
            let text = String(text)
            return pattern.matches(in: text, range: NSRange(text.startIndex..., in: text)).map { String(text[Range($0.range(at: group), in: text)!]) }
        }
        // Each row: the targets it names (first column) and the words of what they depend on.
        var rows: [(names: Set<String>, dependsOn: Set<String>)] = []
        for line in table.split(separator: "\n") where line.hasPrefix("| `") {
            let columns = line.split(separator: "|", omittingEmptySubsequences: false)
            guard columns.count > 3 else { continue }
            rows.append((Set(matches(code, columns[1], group: 1)), Set(matches(word, columns[2], group: 0))))
        }
        let known = Set(targets.map(\.name)).union(targets.flatMap(\.dependencies))
        var differences: [String] = []
        for row in rows {
            let described = targets.filter { row.names.contains($0.name) }
            let declared = Set(described.flatMap(\.dependencies)).subtracting(row.names)
            let listed = row.dependsOn.intersection(known).subtracting(row.names)
            if declared != listed {
                differences.append("\(row.names.sorted().joined(separator: ", ")): Package.swift has \(declared.subtracting(listed).sorted()) "
                    + "that the row lacks, the row has \(listed.subtracting(declared).sorted()) that Package.swift lacks")
            }
        }
        let described = rows.reduce(into: Set<String>()) { $0.formUnion($1.names) }
        let missing = targets.filter { $0.type != "test" && !described.contains($0.name) }.map(\.name)
        #expect(missing.isEmpty, "docs/ARCHITECTURE.md has no row for \(missing)")
        #expect(differences.isEmpty, "\(differences.joined(separator: "; "))")
    }
}
