#if canImport(Glibc)
import Glibc
#endif
import LuaSandbox

/// Measures the Lua engine and the hotspot runtime against their goals and prints one table.
/// Meant for a release build (`make bench`); debug figures say little.
@main
struct HotspotBench {
    static func main() async {
        // A stock interpreter that fails to read its program must not kill the bench.
        signal(SIGPIPE, SIG_IGN)
        let start = Deadline.now.nanoseconds
        var figures: [Figure] = []
        figures += await measure("Round trip, trivial handler") { [try await measureRoundTrip()] }
        figures += await measure("IPC floor: echo through cat") { [try measureProcessEcho()] }
        figures += await measure("Worker start to first answer") { [try await measureWorkerStart()] }
        figures += await measure("Idle worker RSS") { try await measureWorkerMemory() }
        figures += await measure("Deadline overshoot, Lua loop (hook)") { [try await measureHookDeadline()] }
        figures += await measure("Deadline overshoot, C overrun (kill)") { [try await measureKillDeadline()] }
        figures += await measure("Commands per second, engine") { [try await measureThroughput()] }
        figures += await measure("Evaluate arbitration") { try await measureArbitration() }
        figures += await measure("Evaluate in one thread") { try measureEvaluateInProcess() }
        figures += await measure("Evaluate in one stock lua5.4 state") { try measureEvaluateInSharedStockState() }
        figures += await measure("Commands per second, runtime") { [try await measureRuntimeThroughput()] }
        figures += await measure("Bound GET") { try await measureScriptHTTP() }
        figures += await measure("Probe verdict") { try measureProbeVerdict() }
        figures += await measure("connect to authenticated") { try await measureConnectWallTime() }
        figures += await measure("Login vs one curl") { try await measureLoginLimit() }
        figures += await measure("Login vs curl, real openNDS") { try await measureOpenNDSLogin() }
        figures += await measure("Login vs the peer") { try await measurePeerLogin() }
        figures += await measure("Cold start to first command") { try await measureColdStart() }
        figures += await measure("Hot reload") { try await measureHotReload() }
        figures += await measure("HAR import, 10 MB") { try measureHARImport() }
        figures += await measure("Idle daemon RSS") { try await measureDaemonMemory() }
        figures += await measure("10,000 declared helpers") { try await measureManyHelpers() }
        figures += await measure("Soak") { try await measureSoak() }
        figures += await measure("Person's page") { try await measurePersonPage() }
        figures += await measure("Metrics, per-command overhead") { [try await measureMetricsOverhead()] }
        figures += await measure("Metrics exposition, 100 helpers") { [try await measureMetricsExposition()] }
        figures += await measure("NetworkManager, activation to evaluate") { try await measureActivationToEvaluate() }
        figures += await measure("NetworkManager, PORTAL to maintain") { try await measurePortalToMaintain() }
        figures += await measure("Idle daemon following NetworkManager") { try await measureIdleWakeUps() }
        print(render(figures))
        print("\nWhole run: \(duration(nanoseconds: nanoseconds(since: start))).")
    }

    /// Runs one benchmark off the main actor (a @Sendable closure is not isolated to it);
    /// one that fails shows as a row whose goal is missed, so the other figures still print.
    private static func measure(_ name: String, _ body: @Sendable () async throws -> [Figure]) async -> [Figure] {
        // `hotspot-bench arbitration runtime` measures only the figures whose names
        // contain one of the arguments (case-insensitive).
        let only = CommandLine.arguments.dropFirst().map { $0.lowercased() }
        guard only.isEmpty || only.contains(where: name.lowercased().contains) else { return [] }
        progress("measuring: \(name)")
        do {
            return try await body()
        } catch {
            return [Figure(name: name, result: "failed: \(error)", goals: [.init(text: "(not measured)", met: false)])]
        }
    }

    /// Progress goes to standard error so standard output holds just the results.
    private static func progress(_ line: String) {
        let bytes = Array((line + "\n").utf8)
        _ = bytes.withUnsafeBytes { write(STDERR_FILENO, $0.baseAddress, $0.count) }
    }
}
