import FoundationEssentials
import LuaSandbox

/// The `hotspot-helper` command line, run as a person runs it: whole processes.
enum HelperCommand {
    static let path = projectExecutable("hotspot-helper")

    /// The checkout the bench belongs to, found from this source file rather than the
    /// current directory, so the bench runs from anywhere in a checkout.
    static let projectRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent()

    /// One of the project's executables as a device installs it: `make bench` runs
    /// `make release` first, which builds them in the project's own `.build/release`.
    static func projectExecutable(_ name: String) -> String {
        projectRoot.appendingPathComponent(".build/release/\(name)").path
    }

    /// A bundled venue script (VenueHelpers/<name>.lua).
    static func bundledScript(_ name: String) throws -> String {
        let path = projectRoot.appendingPathComponent("VenueHelpers/\(name).lua").path
        guard FileManager.default.fileExists(atPath: path) else { throw BenchError("no bundled script at \(path)") }
        return path
    }

    /// `hotspot-helper connect` with `arguments`, JSON events, and every command's
    /// deadline short, so a run that hangs fails the figure instead of stalling the bench.
    static func connect(_ arguments: [String]) -> [String] {
        [path, "connect", "--json", "--deadline", "10"] + arguments
    }

    /// `hotspot-helper run`, the daemon, keeping one network on loopback.
    static func run(scripts: String, state: String, ssid: String) -> [String] {
        [path, "run", "--json", "--deadline", "10", "--scripts", scripts, "--state-dir", state, "--source", "interface:lo:\(ssid)"]
    }

    /// `hotspot-helper dev` with `arguments` and JSON events.
    static func dev(_ arguments: [String]) -> [String] {
        [path, "dev", "--json", "--deadline", "10"] + arguments
    }
}

/// A directory of its own under the temporary directory, for scripts and secrets.
struct ScratchDirectory {
    let path: String

    init() throws {
        path = FileManager.default.temporaryDirectory.appendingPathComponent("hotspot-bench-" + UUID().uuidString).path
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    }

    /// A directory holding `sources` as helper scripts, named by `RuntimeBench.helperID` so
    /// the runtime's load order (sorted names) is the order of `sources`.
    init(helperScripts sources: [String]) throws {
        try self.init()
        for (number, text) in sources.enumerated() {
            try write(text, to: RuntimeBench.helperID(number) + ".lua")
        }
    }

    /// Writes `text` to the file `name` in the directory, readable by its owner only when
    /// `private`; returns the file's path.
    @discardableResult
    func write(_ text: String, to name: String, private: Bool = false) throws -> String {
        let file = path + "/" + name
        try text.write(toFile: file, atomically: false, encoding: .utf8)
        if `private` { try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: file) }
        return file
    }

    func remove() {
        try? FileManager.default.removeItem(atPath: path)
    }
}
