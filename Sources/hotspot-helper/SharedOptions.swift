import ArgumentParser
import Foundation
import HotspotNetwork
import HotspotRuntime
import LuaSandbox

/// Where a network's traffic goes: the options `connect` and `probe` share.
struct NetworkOptions: ParsableArguments {
    @Option(help: ArgumentHelp("The interface the network's traffic leaves by (default: the default route's).", valueName: "iface"))
    var interface: String?

    @Option(name: .customLong("resolver"),
            help: ArgumentHelp("The network's DNS resolver, asked through --interface; repeatable (default: the system's).",
                               valueName: "address[:port]"))
    var resolvers: [String] = []

    func validate() throws {
        for resolver in resolvers where !NetworkBinding.isResolverAddress(resolver) {
            throw ValidationError("--resolver \(resolver) is not an IPv4 address with an optional port, such as 192.0.2.53 or 127.0.0.1:5353")
        }
        if let interface, if_nametoindex(interface) == 0 {
            throw ValidationError("--interface \(interface): no such network interface (see `ip link`)")
        }
    }

    /// Probes given with `flag` must parse (`Probe.parse`: a URL, or the compact syntax).
    static func validateProbes(_ specs: [String], flag: String) throws {
        for spec in specs {
            if case .failure(let error) = Probe.parse(spec) { throw ValidationError("\(flag) \(spec): \(error.problem)") }
        }
    }
}

/// The script engine with every script at a path loaded as a helper. A command that cannot
/// have it (no engine, a script that does not load) says why and exits 2.
struct LoadedHelpers {
    let engine: LuaEngine
    let helpers: [HelperScript]

    static func load(_ path: String, output: EventOutput) async throws -> LoadedHelpers {
        let engine: LuaEngine
        do {
            engine = try LuaEngine(HotspotRuntime.engineConfiguration())
        } catch {
            output.fail("cannot start the script engine: \(error)")
            throw ExitCode(2)
        }
        let (helpers, problems) = await HotspotRuntime.loadHelpers(at: path, into: engine)
        guard problems.isEmpty else {
            engine.shutdown()
            problems.forEach { output.fail($0.description) }
            output.fail("fix the script\(problems.count == 1 ? "" : "s") above; `hotspot-helper check` lists every problem")
            throw ExitCode(2)
        }
        return LoadedHelpers(engine: engine, helpers: helpers)
    }

    /// The secrets file at `path` (none without one), or exit 2 saying what is wrong with it.
    static func secrets(at path: String?, output: EventOutput) throws -> Secrets {
        guard let path else { return Secrets() }
        do {
            return try Secrets.load(path: path)
        } catch {
            output.fail("\(error)")
            throw ExitCode(2)
        }
    }
}
