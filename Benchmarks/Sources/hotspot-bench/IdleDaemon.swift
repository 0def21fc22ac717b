/// `hotspot-helper run` keeping the network Venue-0 with helper scripts of its own, started
/// and read up to the network's `authenticated`.
final class IdleDaemon {
    let process: ChildProcess
    let state: ScratchDirectory
    private let scripts: ScratchDirectory

    init(helperScripts sources: [String]) throws {
        scripts = try ScratchDirectory(helperScripts: sources)
        state = try ScratchDirectory()
        do {
            process = try ChildProcess(HelperCommand.run(scripts: scripts.path, state: state.path, ssid: "Venue-0"))
            process.closeInput()
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
