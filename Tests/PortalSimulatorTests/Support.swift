import Foundation
import HotspotCore
import PortalSimulator
import Testing
import TestSupport

/// One HTTP response as curl saw it.
struct HTTPReply {
    let status: Int
    let headers: [(name: String, value: String)]
    let body: Data

    var text: String { String(decoding: body, as: UTF8.self) }

    /// The last value of the header `name`, whatever its case.
    func header(_ name: String) -> String? {
        headers.last { $0.name.lowercased() == name.lowercased() }?.value
    }
}

/// A device talking to one portal through the `curl` command line tool, from its own source
/// address (portals key sessions on it), optionally with a cookie jar. Every host name
/// connects to the portal, as the DNS hijack would make it.
struct Device {
    let port: Int
    var address = "127.0.0.1"
    var cookieJar: String?

    init(_ portal: SimulatedPortal, address: String = "127.0.0.1", keepsCookies: Bool = false) {
        port = portal.port
        self.address = address
        cookieJar = keepsCookies ? scratchPath("cookies") : nil
    }

    /// `path` on portal.aroma.example, or an absolute URL.
    func url(_ path: String) -> String {
        path.hasPrefix("http") ? path : "http://portal.aroma.example:\(port)\(path)"
    }

    func get(_ path: String, maxTime: Double = 10, extra: [String] = []) async throws -> HTTPReply {
        try await fetch(url(path), arguments: extra, maxTime: maxTime)
    }

    func post(_ path: String, _ fields: [(String, String)]) async throws -> HTTPReply {
        let data = fields.isEmpty ? ["--data", ""] : fields.flatMap { ["--data-urlencode", "\($0)=\($1)"] }
        return try await fetch(url(path), arguments: data)
    }

    private func fetch(_ url: String, arguments: [String], maxTime: Double = 10) async throws -> HTTPReply {
        let headers = scratchPath("headers"), body = scratchPath("body")
        defer { try? FileManager.default.removeItem(atPath: headers); try? FileManager.default.removeItem(atPath: body) }
        var options = [
            "-s", "-S", "--max-time", String(maxTime), "--connect-to", "::127.0.0.1:\(port)", "--interface", address,
            "-D", headers, "-o", body,
        ]
        if let cookieJar { options += ["-b", cookieJar, "-c", cookieJar] }
        let run = try await runProcess("/usr/bin/curl", options + arguments + [url])
        let blocks = String(decoding: FileManager.default.contents(atPath: headers) ?? Data(), as: UTF8.self)
            .components(separatedBy: "\r\n\r\n").filter { !$0.isEmpty }
        guard let lines = blocks.last?.components(separatedBy: "\r\n"), let statusLine = lines.first,
            let status = Int(statusLine.split(separator: " ").dropFirst().first ?? "")
        else {
            throw ProcessFailure(description: "curl \(url) exited \(run.status): \(run.errors)")
        }
        let fields = lines.dropFirst().compactMap { line -> (String, String)? in
            guard let colon = line.firstIndex(of: ":") else { return nil }
            return (String(line[..<colon]), line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces))
        }
        return HTTPReply(status: status, headers: fields, body: FileManager.default.contents(atPath: body) ?? Data())
    }
}

struct ProcessFailure: Error, CustomStringConvertible {
    let description: String
}

struct ProcessRun {
    let status: Int32
    let output: Data
    let errors: String

    var text: String { String(decoding: output, as: UTF8.self) }
}

/// Runs a program to its end without blocking a thread of the cooperative pool, which the
/// simulator's handlers need too; output goes through files, read once it has ended.
func runProcess(_ executable: String, _ arguments: [String]) async throws -> ProcessRun {
    let output = scratchPath("out"), errors = scratchPath("err")
    _ = FileManager.default.createFile(atPath: output, contents: nil)
    _ = FileManager.default.createFile(atPath: errors, contents: nil)
    defer { try? FileManager.default.removeItem(atPath: output); try? FileManager.default.removeItem(atPath: errors) }
    let process = Process()
    process.executableURL = URL(fileURLWithPath: executable)
    process.arguments = arguments
    process.standardOutput = FileHandle(forWritingAtPath: output)
    process.standardError = FileHandle(forWritingAtPath: errors)
    let status = try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Int32, any Error>) in
        process.terminationHandler = { continuation.resume(returning: $0.terminationStatus) }
        do { try process.run() } catch { continuation.resume(throwing: error) }
    }
    return ProcessRun(
        status: status, output: FileManager.default.contents(atPath: output) ?? Data(),
        errors: String(decoding: FileManager.default.contents(atPath: errors) ?? Data(), as: UTF8.self))
}

/// Runs `body` against a freshly started portal, and stops the portal whatever happens; the
/// portal's sessions and intervals are timed by `clock` (the system's unless a test moves one).
func withPortal(
    _ scenario: Scenario, settings: ScenarioSettings = .init(), dnsPort: Int? = nil, clock: any HotspotClock = SystemClock(),
    _ body: (SimulatedPortal) async throws -> Void
) async throws {
    try await SimulatedPortal.running(scenario, settings: settings, dnsPort: dnsPort, clock: clock, body)
}

/// The text between `start` and the next `end` in `text`.
func extract(_ text: String, between start: String, and end: String) -> String? {
    guard let from = text.range(of: start), let to = text.range(of: end, range: from.upperBound..<text.endIndex) else {
        return nil
    }
    return String(text[from.upperBound..<to.lowerBound])
}

extension Duration {
    var seconds: Double { Double(components.seconds) + Double(components.attoseconds) / 1e18 }
}
