/// `hotspot-helper run` keeping the network Venue-0 with helper scripts of its own, started
/// and read up to the network's `authenticated`.
final class IdleDaemon {
    let process: ChildProcess
    let state: ScratchDirectory
    /// Where its metrics are served on loopback, when it was asked to serve them.
    let metricsPort: Int?
    private let scripts: ScratchDirectory

    init(helperScripts sources: [String], servingMetrics: Bool = false) throws {
        scripts = try ScratchDirectory(helperScripts: sources)
        state = try ScratchDirectory()
        do {
            let metrics = servingMetrics ? ["--metrics-listen", "127.0.0.1:0"] : []
            process = try ChildProcess(HelperCommand.run(scripts: scripts.path, state: state.path, ssid: "Venue-0") + metrics)
            process.closeInput()
            // The line saying where the metrics are comes before the first join.
            metricsPort = servingMetrics ? loopbackPort(in: try process.readLine(containing: "metrics at http://")) : nil
            if servingMetrics, metricsPort == nil { throw BenchError("hotspot-helper run said no metrics address") }
            _ = try process.readLine(containing: #""to":"authenticated""#)
        } catch {
            scripts.remove()
            state.remove()
            throw error
        }
    }

    /// Ends it with SIGTERM and removes its directories; its wait status.
    func stop() -> Int32 {
        defer {
            scripts.remove()
            state.remove()
        }
        return process.terminate()
    }
}
