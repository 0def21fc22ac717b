/// `hotspot-helper run` keeping the network Venue-0 with helper scripts of its own, started
/// and read up to the network's `authenticated`.
final class IdleDaemon {
    let process: ChildProcess
    let state: ScratchDirectory
    /// Where its metrics are served on loopback, when it was asked to serve them.
    let metricsPort: Int?
    private let scripts: ScratchDirectory
    /// Whether `stop` removes its directories: not those it was given.
    private let ownsDirectories: Bool

    convenience init(helperScripts sources: [String], servingMetrics: Bool = false) throws {
        let scripts = try ScratchDirectory(helperScripts: sources)
        let state: ScratchDirectory
        do {
            state = try ScratchDirectory()
        } catch {
            scripts.remove()
            throw error
        }
        try self.init(scripts: scripts, state: state, servingMetrics: servingMetrics, ownsDirectories: true)
    }

    /// A daemon on directories the caller keeps: a start after another, with what the one
    /// before left in the state directory.
    init(scripts: ScratchDirectory, state: ScratchDirectory, servingMetrics: Bool = false, ownsDirectories: Bool = false) throws {
        self.scripts = scripts
        self.state = state
        self.ownsDirectories = ownsDirectories
        do {
            let metrics = servingMetrics ? ["--metrics-listen", "127.0.0.1:0"] : []
            process = try ChildProcess(HelperCommand.run(scripts: scripts.path, state: state.path, ssid: "Venue-0") + metrics)
            process.closeInput()
            // The line saying where the metrics are comes before the first join.
            metricsPort = servingMetrics ? loopbackPort(in: try process.readLine(containing: "metrics at http://")) : nil
            if servingMetrics, metricsPort == nil { throw BenchError("hotspot-helper run said no metrics address") }
            _ = try process.readLine(containing: #""to":"authenticated""#)
        } catch {
            if ownsDirectories {
                scripts.remove()
                state.remove()
            }
            throw error
        }
    }

    /// Ends it with SIGTERM and removes its directories; its wait status.
    func stop() -> Int32 {
        defer {
            if ownsDirectories {
                scripts.remove()
                state.remove()
            }
        }
        return process.terminate()
    }
}
