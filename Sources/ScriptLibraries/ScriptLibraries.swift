public import LuaSandbox
import ScriptContract

/// Every host library venue scripts can use, as the worker registers them.
public enum ScriptLibraries {
    public static let modules: [HostModule] = [
        TimeLibrary.module, JSONLibrary.module, Base64Library.module, URLLibrary.module, LogLibrary.module,
        HTMLLibrary.module, CryptoLibrary.module, HTTPLibrary.module, WISPrLibrary.module,
        SocketLibrary.module,
    ]
}

extension HostCall {
    /// The call's deadline on the network layer's clock. Two deadline types on purpose: the
    /// engine's `Deadline` is CLOCK_MONOTONIC nanoseconds, which the supervisor, its workers and
    /// the C hook share across processes, while HotspotNetwork, which also serves the runtime
    /// outside scripts and knows nothing of the engine, takes `ContinuousClock.Instant`. The two
    /// meet here, through the time left, once per library call.
    var networkDeadline: ContinuousClock.Instant? {
        deadline.map { ContinuousClock.now.advanced(by: $0.remaining) }
    }
}

extension HostModule {
    /// A library by the contract's name, public or reached by the prelude only as it says.
    static func library(_ name: ScriptNames.HostModuleName, functions: [(name: String, function: HostFunction)]) -> HostModule {
        HostModule(name.rawValue, isPublic: name.isPublic, functions: functions)
    }
}
