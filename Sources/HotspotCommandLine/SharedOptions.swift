#if canImport(Glibc)
import Glibc
#endif
package import ArgumentParser
import FoundationEssentials
import HotspotNetwork
package import HotspotRuntime
import LinuxFiles
import NetworkSources
package import LuaSandbox
import HotspotCore

/// The network's own DNS resolvers, asked through its interface.
package struct ResolverOptions: ParsableArguments {
    package init() {}

    @Option(name: .customLong("resolver"),
            help: ArgumentHelp("The network's DNS resolver, asked through its interface; repeatable (default: the system's).",
                               valueName: "address[:port]"))
    package var resolvers: [String] = []

    package func validate() throws {
        for resolver in resolvers where !NetworkBinding.isResolverAddress(resolver) {
            throw ValidationError("--resolver \(resolver) is not an IP address with an optional port, such as 192.0.2.53, "
                                  + "127.0.0.1:5353, 2001:db8::53 or [2001:db8::53]:5353")
        }
    }
}

/// Where a network's traffic goes: the options `connect`, `probe` and `dev` share.
package struct NetworkOptions: ParsableArguments {
    package init() {}

    @Option(help: ArgumentHelp("The interface the network's traffic leaves by (default: the default route's).", valueName: "iface"))
    package var interface: String?

    @OptionGroup package var resolverOptions: ResolverOptions

    package var resolvers: [String] { resolverOptions.resolvers }

    package func validate() throws {
        if let interface, if_nametoindex(interface) == 0 {
            throw ValidationError("--interface \(interface): no such network interface (see `ip link`)")
        }
    }
}

/// What helpers get from the runtime: the options `connect`, `run` and `dev` share.
package struct RuntimeOptions: ParsableArguments {
    package init() {}

    @Option(help: ArgumentHelp("Venue credentials for cmd:secret: one [helper] section each, mode 0600.", valueName: "file"))
    package var secrets: String?

    @Option(name: .customLong("ca-file"), help: ArgumentHelp("Extra trusted CA certificates (PEM) for portals' HTTPS.", valueName: "file"))
    package var caFile: String?

    @Option(parsing: .unconditional, help: ArgumentHelp("Deadline of each command in seconds, 0.01 to 86400 (present_ui has none).", valueName: "seconds"),
            transform: Seconds.within(0.01...Seconds.day))
    package var deadline = Seconds(45)

    @Option(help: ArgumentHelp("Worker processes that run the scripts, 1 to 16. Scripts run in parallel with one; more cost about 2 MiB each and narrow what a worker killed for an overrun interrupts. Each may hold up to 160 MiB (its scripts 112 MiB together).",
                               valueName: "count"))
    package var workers = 1

    package func validate() throws {
        guard (1...16).contains(workers) else { throw ValidationError("--workers must be between 1 and 16, not \(workers)") }
        if let caFile { try Self.check(caFile: caFile) }
    }

    /// A missing or unreadable CA file, or one without a PEM certificate, once made every
    /// HTTPS request fail later naming no file: it is checked at start.
    static func check(caFile: String) throws {
        let text: String
        do {
            text = String(decoding: try BoundedFile.read(caFile, limit: 4 * BoundedFile.mebibyte), as: UTF8.self)
        } catch {
            throw ValidationError("--ca-file \(caFile): \(error)")
        }
        guard text.contains("-----BEGIN CERTIFICATE-----"), text.contains("-----END CERTIFICATE-----") else {
            throw ValidationError("--ca-file \(caFile): no PEM certificate in it (\"-----BEGIN CERTIFICATE-----\"); "
                                  + "convert a DER one with `openssl x509 -inform der -in FILE -out FILE.pem`")
        }
    }

    /// The runtime's configuration, with the secrets file read (or exit 2 saying why not).
    package func configuration(maintainInterval: Duration, output: EventOutput) throws -> HotspotRuntime.Configuration {
        .init(policy: .init(commandDeadline: deadline.duration, maintainInterval: maintainInterval),
              secrets: try LoadedHelpers.secrets(at: secrets, output: output), caFile: caFile)
    }
}

/// How a joined network is kept: the options `connect` and `run` share.
package struct KeepingOptions: ParsableArguments {
    package init() {}

    @Option(name: .customLong("probe-url"),
            help: ArgumentHelp("A connectivity probe for cmd:probe() and to check a helper's success, replacing the defaults; repeatable. A URL (open means 204, or 200 saying \"success\"), or a line as `probe --help` shows.",
                               valueName: "probe"),
            transform: ProbeArgument.parse)
    package var probes: [ProbeArgument] = []

    @Option(name: .customLong("maintain-interval"), parsing: .unconditional,
            help: ArgumentHelp("Seconds between maintain commands, 0.01 to 604800 (a week).", valueName: "seconds"),
            transform: Seconds.within(0.01...(7 * Seconds.day)))
    package var maintainInterval = Seconds(300)

    package func validate() throws {
    }
}

/// Recordings of a helper's failed attempts at a venue: the options `run` and `connect` share.
package struct FailureRecordingOptions: ParsableArguments {
    package init() {}

    @Flag(name: .customLong("record-failures"),
          help: "When a helper fails at a venue, write the requests of that attempt as a HAR file in STATE-DIR/failures (secrets and personal data taken out; the latest 20 kept), to replay with `hotspot-helper simulate --har`.")
    package var recordFailures = false

    @Option(name: .customLong("record-failures-to"),
            help: ArgumentHelp("Write those recordings in this directory instead (implies --record-failures).", valueName: "dir"))
    package var directory: String?

    /// Where the recordings go, nil when none is asked for; `--record-failures` needs a state directory.
    package func recordings(stateDirectory: String?) throws -> FailureRecordings? {
        if let directory { return FailureRecordings(directory: directory) }
        guard recordFailures else { return nil }
        guard let stateDirectory else {
            throw ValidationError("--record-failures writes in STATE-DIR/failures: give --state-dir, or --record-failures-to DIR")
        }
        return FailureRecordings(directory: stateDirectory + "/failures")
    }
}

/// The script engine with every script at a path loaded as a helper. A command that cannot
/// have it (no engine, a script that does not load) says why and exits 2.
package struct LoadedHelpers {
    package let engine: LuaEngine
    package let helpers: [HelperScript]

    package static func load(_ path: String, workers: Int? = nil, output: EventOutput) async throws -> LoadedHelpers {
        // Not a script's problem, so not reported as one ("fix the script above").
        guard FileManager.default.fileExists(atPath: path) else {
            output.fail("--scripts \(path): no such file or directory; give a venue script, or a directory of *.lua scripts")
            throw ExitCode(2)
        }
        let engine = try engine(workers: workers, output: output)
        let (helpers, problems) = await HotspotRuntime.loadHelpers(at: path, into: engine)
        guard problems.isEmpty else {
            engine.shutdown()
            report(problems, output: output)
            throw ExitCode(2)
        }
        return LoadedHelpers(engine: engine, helpers: helpers)
    }

    /// Says on standard error where each script that does not load went wrong.
    package static func report(_ problems: [ScriptProblem], output: EventOutput) {
        problems.forEach { output.fail($0.description) }
        output.fail("fix the script\(problems.count == 1 ? "" : "s") above; `hotspot-helper check` lists every problem")
    }

    /// The script engine's workers (`workers` of them, or the runtime's default), or exit 2
    /// saying why they did not start.
    package static func engine(workers: Int? = nil, output: EventOutput) throws -> LuaEngine {
        do {
            return try LuaEngine(workers.map { HotspotRuntime.engineConfiguration(workerCount: $0) } ?? HotspotRuntime.engineConfiguration())
        } catch {
            output.fail("cannot start the script engine: \(error)")
            throw ExitCode(2)
        }
    }

    /// The state directory at `path` (in memory without one), or exit 2 saying why not.
    package static func stateDirectory(at path: String?, output: EventOutput) throws -> StateDirectory {
        do {
            return try StateDirectory(path: path)
        } catch {
            output.fail("\(error)")
            throw ExitCode(2)
        }
    }

    /// The name of the systemd credential (`LoadCredential=secrets:PATH`, or
    /// `LoadCredentialEncrypted=`) read in place of a `--secrets` file.
    static let secretsCredential = "secrets"

    /// The path of the service's credential `name`, when systemd passed one.
    private static func credentialPath(_ name: String) -> String? {
        guard let directory = ProcessInfo.processInfo.environment["CREDENTIALS_DIRECTORY"], !directory.isEmpty else { return nil }
        let path = directory + "/" + name
        return FileManager.default.fileExists(atPath: path) ? path : nil
    }

    /// The secrets file at `path`; without one, the service's `secrets` credential, which
    /// systemd put in `$CREDENTIALS_DIRECTORY` (decrypted, readable by the service alone);
    /// none without either. Exit 2 saying what is wrong with the file.
    package static func secrets(at path: String?, output: EventOutput) throws -> Secrets {
        guard let path = path ?? credentialPath(secretsCredential) else { return Secrets() }
        do {
            return try Secrets.load(path: path)
        } catch {
            output.fail("\(error)")
            throw ExitCode(2)
        }
    }
}

/// Where a network's RFC 8908 Captive Portal API is: the options `connect` (and the daemon)
/// take. Without `--capport-url`, DHCP option 114 is looked up for `--interface`.
package struct CaptivePortalAPIOptions: ParsableArguments {
    package init() {}

    @Option(name: .customLong("capport-url"),
            help: ArgumentHelp("The network's RFC 8908 Captive Portal API URI (default: DHCP option 114 of --interface, where the platform gives it).",
                               valueName: "url"))
    package var url: String?

    @Flag(name: .customLong("capport-allow-http"), help: "Allow a plain-HTTP Captive Portal API (local testing only; the RFC requires HTTPS).")
    package var allowsPlainHTTP = false

    package func validate() throws {
        guard let url else { return }
        guard url == CaptivePortalAPI.unrestricted || url.hasPrefix("https://") || url.hasPrefix("http://") else {
            throw ValidationError("--capport-url \(url) is not an https:// URL or \(CaptivePortalAPI.unrestricted)")
        }
        if url.hasPrefix("http://"), !allowsPlainHTTP {
            throw ValidationError("--capport-url \(url) is plain HTTP; the Captive Portal API must be HTTPS (add --capport-allow-http for local testing)")
        }
    }

    /// The API URI of the network on `interface`, and a line saying where it came from when it was discovered.
    package func uri(interface: String?) -> (uri: String?, note: String?) {
        if let url { return (url, nil) }
        guard let interface, let found = CaptivePortalAPIDiscovery.uri(forInterface: interface) else { return (nil, nil) }
        return (found.uri, "the Captive Portal API of \(interface) is \(found.uri) (from \(found.source))")
    }
}

/// What a person enters in a helper's form (`cmd.answers` in present_ui).
package struct AnswerOptions: ParsableArguments {
    package init() {}

    @Option(name: .customLong("answer"),
            help: ArgumentHelp("What the person enters in present_ui, as name=value; repeatable.", valueName: "name=value"))
    package var answerFlags: [String] = []

    @Option(name: .customLong("answers"), help: ArgumentHelp("A file of name=value lines for present_ui.", valueName: "file"))
    package var answersFile: String?

    package func validate() throws {
        for answer in answerFlags where !answer.contains("=") {
            throw ValidationError("--answer \(answer) must be name=value, such as email=guest@example.org")
        }
    }

    /// Whether any answer was given on the command line.
    package var given: Bool { !answerFlags.isEmpty || answersFile != nil }

    /// The answers from the file, then the flags (a flag wins over a line of the file).
    package func answers() throws -> [String: String] {
        var lines: [String] = []
        if let answersFile {
            let text: String
            do {
                text = String(decoding: try BoundedFile.read(answersFile, limit: BoundedFile.mebibyte), as: UTF8.self)
            } catch {
                throw ValidationError("--answers \(answersFile): \(error)")
            }
            lines = text.split(whereSeparator: \.isNewline).map(String.init).filter { !$0.hasPrefix("#") && $0.contains("=") }
        }
        var answers: [String: String] = [:]
        for line in lines + answerFlags {
            let parts = line.split(separator: "=", maxSplits: 1).map { $0.trimmingWhitespace() }
            answers[parts[0]] = parts.count > 1 ? parts[1] : ""
        }
        return answers
    }
}

/// For CI: a run whose network no helper claims is a failure of its own, as when a venue
/// script no longer recognises its portal (otherwise the network counts as open).
package struct RequireHelperOption: ParsableArguments {
    package init() {}

    @Flag(name: .customLong("require-helper"), help: "Exit 3 when no helper claims the network, as when a venue script no longer recognises its portal.")
    package var requireHelper = false

    /// Exit status 3 when a helper was required and none claimed the network.
    package func check(claimedBy helper: String?) throws {
        if requireHelper, helper == nil { throw ExitCode(3) }
    }
}
