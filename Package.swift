// swift-tools-version: 6.1
import PackageDescription

/// libxml2's headers (Debian's libxml2-dev), for `CLibXML2` and the Swift that reads its types.
let libxml2Headers = "/usr/include/libxml2"

/// For the executables a device runs: lld, with relative relocations packed (DT_RELR). The
/// loader then reads a few KiB where gold's table took a megabyte, resident in every process.
let packedRelocations: [LinkerSetting] = [.unsafeFlags(["-use-ld=lld", "-Xlinker", "-z", "-Xlinker", "pack-relative-relocs"])]

/// The daemon's and the person's page's executables, released: the functions a device runs
/// placed first, in the order of Sources/TARGET/symbol-order.txt (`make symbol-order`), so
/// they share fewer pages of code, which the idle processes keep resident (names the code no
/// longer has are skipped); and the C++ library the Swift runtime uses linked in from GCC's
/// libstdc++.a, which `make release` puts in .build/static-libstdc++ (the linker searches that
/// folder before GCC's, which holds libstdc++.so): loading libstdc++.so took 0.6 ms of each
/// process's start. Without that folder the executables use libstdc++.so as before.
func releasedForDevices(_ target: String) -> [LinkerSetting] {
    [.unsafeFlags([
        "-Xlinker", "--symbol-ordering-file=" + Context.packageDirectory + "/Sources/" + target + "/symbol-order.txt",
        "-Xlinker", "--no-warn-symbol-ordering",
        "-L" + Context.packageDirectory + "/.build/static-libstdc++",
    ], .when(configuration: .release))]
}

let swiftSettings: [SwiftSetting] = [
    .enableUpcomingFeature("ExistentialAny"),
    .enableUpcomingFeature("InternalImportsByDefault"),
]

let package = Package(
    name: "hotspot-helper",
    platforms: [.macOS(.v15)],
    products: [
        .library(name: "LuaSandbox", targets: ["LuaSandbox"]),
        .library(name: "HotspotCore", targets: ["HotspotCore"]),
        .library(name: "HotspotRuntime", targets: ["HotspotRuntime"]),
        // For the bench and the fuzz targets (Benchmarks/ and Fuzz/, packages of their own so
        // that `make test` does not build them).
        .library(name: "HotspotNetwork", targets: ["HotspotNetwork"]),
        .library(name: "HotspotSystem", targets: ["HotspotSystem"]),
        .library(name: "HotspotMetrics", targets: ["HotspotMetrics"]),
        .library(name: "ScriptLibraries", targets: ["ScriptLibraries"]),
        .library(name: "PortalSimulator", targets: ["PortalSimulator"]),
        .library(name: "Spawning", targets: ["Spawning"]),
        // For the tests and the bench, which both run a real NetworkManager in namespaces.
        .library(name: "TestbedRecipes", targets: ["TestbedRecipes"]),
        .executable(name: "hotspot-helper", targets: ["hotspot-helper"]),
        .executable(name: "hotspot-helper-devtools", targets: ["hotspot-helper-devtools"]),
        .executable(name: "hotspot-helper-web", targets: ["hotspot-helper-web"]),
        .executable(name: "lua-sandbox-worker", targets: ["lua-sandbox-worker"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.5.0"),
        // Without its "FullFoundation" trait, Hummingbird needs FoundationEssentials only, and so does the daemon.
        .package(url: "https://github.com/hummingbird-project/hummingbird", from: "2.28.0", traits: ["ConfigurationSupport"]),
        .package(url: "https://github.com/apple/swift-log", from: "1.6.0"),
        // NIOCore (already Hummingbird's) for the HTTP servers' connection limits.
        .package(url: "https://github.com/apple/swift-nio.git", from: "2.81.0"),
        // The daemon's metrics (Prometheus's text format); needs swift-atomics and swift-metrics' CoreMetrics only.
        .package(url: "https://github.com/swift-server/swift-prometheus", from: "2.4.1"),
    ],
    targets: [
        // glibc's GNU extensions that spawning needs (the closefrom file action, pipe2), which
        // Swift's Glibc module leaves out.
        .target(name: "CSpawning"),
        // The one posix_spawn helper: the engine starts its workers with it, the OS glue the
        // platform's tools, the bench the programs it times. At the bottom of the graph, apart
        // from the engine's C, so the OS glue spawns without depending on Lua.
        .target(name: "Spawning", dependencies: ["CSpawning"], swiftSettings: swiftSettings),
        // The project's one lock (PlainLock), at the bottom of the graph with nothing under it.
        .target(name: "Locking", swiftSettings: swiftSettings),
        // Lua 5.4 from Debian's liblua5.4-dev.
        .systemLibrary(name: "CLua", pkgConfig: "lua5.4", providers: [.apt(["liblua5.4-dev"])]),
        // The parts of the sandbox that must be C: Lua's macros, the allocator, the hook,
        // the protected-call wrappers and the error trampoline (no longjmp crosses Swift).
        .target(name: "CLuaSandbox", dependencies: ["CLua"]),
        // A reusable sandboxed Lua engine: states in worker processes, hard deadlines,
        // memory caps. Knows nothing of hotspots.
        .target(name: "LuaSandbox", dependencies: ["CLuaSandbox", "Spawning", "Locking"], swiftSettings: swiftSettings),
        // The engine's worker process with no extra host modules.
        .executableTarget(name: "lua-sandbox-worker", dependencies: ["LuaSandbox"], swiftSettings: swiftSettings),
        // Opens the project's own builds of libcurl and libxml2 where they are installed
        // (the Makefile), the system's where not.
        .target(name: "CLibraryLoading"),
        // libcurl, opened on first use (dlopen), and its variadic setters, which Swift cannot call.
        .target(name: "CCurl", dependencies: ["CLibraryLoading"]),
        // libxml2's tolerant HTML parser, opened on first use (dlopen), as libcurl is: linked, it
        // (Debian's brings ICU) was loaded into every process at its start. Its headers' folder
        // is named here, as `pkg-config --cflags libxml-2.0` gives it on Debian: pkg-config
        // would also link the library.
        .target(name: "CLibXML2", dependencies: ["CLibraryLoading"], cSettings: [.unsafeFlags(["-I" + libxml2Headers])]),
        // OpenSSL's digests, for the script libraries, also opened on first use.
        .target(name: "COpenSSLCrypto"),
        // The hotspot model and its state machine, with no I/O: helpers, persistence, the
        // network's checks and time are seams (protocols) that the runtime implements.
        .target(name: "HotspotCore", swiftSettings: swiftSettings),
        // The network layer: host allowlists, URLs, bound HTTP with cookies, bound DNS.
        // Foundation-free, because it runs inside the worker processes.
        .target(name: "HotspotNetwork", dependencies: ["CCurl", "HotspotCore", "Locking"], swiftSettings: swiftSettings),
        // What the runtime and the script libraries exchange through the prelude: the
        // helper's context (HelperContext). Foundation-free, as the libraries.
        .target(name: "ScriptContract", dependencies: ["LuaSandbox", "HotspotNetwork"], swiftSettings: swiftSettings),
        // Host libraries for venue scripts (run inside the worker processes).
        .target(
            name: "ScriptLibraries", dependencies: ["LuaSandbox", "HotspotNetwork", "ScriptContract", "CLibXML2", "COpenSSLCrypto", "Locking"],
            swiftSettings: swiftSettings + [.unsafeFlags(["-Xcc", "-I" + libxml2Headers])]),
        // libsystemd's sd-bus (Debian's libsystemd-dev for the header): D-Bus for the
        // NetworkManager source and the desktop's notifications, opened on first use.
        .target(name: "CSystemd"),
        // The OS glue: inotify (ScriptWatcher), the control socket (a Unix socket checked with
        // SO_PEERCRED), the platform's tools run to their end (Subprocess), DHCP option 114
        // from leases and nmcli (CaptivePortalAPIDiscovery), the sources of networks (an
        // interface followed through rtnetlink: InterfaceSource; NetworkManager on the system
        // bus: NetworkManagerSource) and the desktop's notifications, D-Bus through sd-bus
        // (SystemBus). No Lua: it knows the hotspot model and the network layer, never the
        // engine, so it can be built and tested without it.
        .target(name: "HotspotSystem", dependencies: ["HotspotCore", "HotspotNetwork", "Spawning", "CSystemd", "Locking"], swiftSettings: swiftSettings),
        // The daemon's metrics in Prometheus's text format, counted from the runtime's events
        // and levels read at each scrape; of the executables, only the daemon's links it.
        .target(
            name: "HotspotMetrics", dependencies: ["HotspotCore", "Locking", .product(name: "Prometheus", package: "swift-prometheus")],
            swiftSettings: swiftSettings),
        // The hotspot-helper runtime: the venue-script contract, the state machine,
        // arbitration between helpers, persistence.
        // Its Prelude/*.lua are embedded as Swift strings by the EmbedLua plugin.
        // The daemon (HotspotDaemon) is here, not in HotspotSystem: it composes this runtime
        // and its helper catalog with the OS glue, so the glue stays free of the engine.
        .target(
            name: "HotspotRuntime", dependencies: ["HotspotCore", "HotspotSystem", "LuaSandbox", "HotspotNetwork", "ScriptContract", "Locking"],
            swiftSettings: swiftSettings, plugins: ["EmbedLua"]),
        // Writes a target's .lua files into a Swift file as strings, for the EmbedLua plugin.
        .executableTarget(name: "embed-lua", swiftSettings: swiftSettings),
        .plugin(name: "EmbedLua", capability: .buildTool(), dependencies: ["embed-lua"]),
        // A Hummingbird responder served until stopped: what the simulator and the person's page share.
        .target(name: "HTTPServing", dependencies: ["Locking", .product(name: "Hummingbird", package: "hummingbird"),
                                                   .product(name: "NIOCore", package: "swift-nio")],
                swiftSettings: swiftSettings),
        // The portal simulator: captive-portal scenarios on a real HTTP server. HotspotNetwork
        // for its JSON writer, the project's one, so the simulator's answers escape as the rest.
        .target(
            name: "PortalSimulator", dependencies: ["HotspotNetwork", "HTTPServing", "Locking", .product(name: "Hummingbird", package: "hummingbird")],
            swiftSettings: swiftSettings),
        // What the daemon's executor needs that Swift's Glibc module leaves out: timer
        // descriptors and thread names.
        .target(name: "CDaemonExecutor"),
        // What the two command-line executables share: options, event output, how they start,
        // and the daemon's executor.
        .target(
            name: "HotspotCommandLine",
            dependencies: [
                "HotspotCore", "HotspotRuntime", "HotspotSystem", "HotspotNetwork", "LuaSandbox", "Locking", "CDaemonExecutor",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ],
            swiftSettings: swiftSettings),
        // The command line, thin, on top of the runtime: what a device runs. It is also the
        // worker process that runs venue scripts, with the script libraries.
        // The two executables start each other, found beside the running one: this one
        // `execv`s hotspot-helper-devtools for demo, dev and simulate (HotspotCommandLine's
        // DevTools), and every engine here, the devtools' and the tests' included, starts
        // this one again as its worker (SandboxWorker.isLaunchedAsWorker). Build both.
        .executableTarget(
            name: "hotspot-helper",
            dependencies: [
                "HotspotCommandLine", "HotspotCore", "HotspotRuntime", "HotspotSystem", "HotspotNetwork", "LuaSandbox", "ScriptLibraries",
                "HotspotMetrics", "Locking", .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ],
            exclude: ["symbol-order.txt"],
            swiftSettings: swiftSettings, linkerSettings: packedRelocations + releasedForDevices("hotspot-helper")),
        // demo, dev and simulate, with the portal simulator, which `hotspot-helper` runs for them
        // (execv, same arguments). Its engine's workers are `hotspot-helper` processes.
        .executableTarget(
            name: "hotspot-helper-devtools",
            dependencies: [
                "HotspotCommandLine", "HotspotCore", "HotspotRuntime", "HotspotSystem", "HotspotNetwork", "PortalSimulator", "Locking",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ],
            swiftSettings: swiftSettings),
        // The page a person opens (`hotspot-helper web`): a web server on loopback, run as that
        // person, that talks to the daemon over its control socket. Hummingbird, as the simulator.
        .target(
            name: "PersonPage", dependencies: ["HotspotCore", "HotspotSystem", "HTTPServing", "Locking", .product(name: "Hummingbird", package: "hummingbird")],
            swiftSettings: swiftSettings),
        // `hotspot-helper web`, which `hotspot-helper` runs (execv) as it runs the devtools, so the
        // daemon's executable stays free of the web server.
        .executableTarget(
            name: "hotspot-helper-web",
            dependencies: ["PersonPage", "Spawning", .product(name: "ArgumentParser", package: "swift-argument-parser")],
            exclude: ["symbol-order.txt"],
            swiftSettings: swiftSettings, linkerSettings: packedRelocations + releasedForDevices("hotspot-helper-web")),
        // A small example of the engine on its own, without hotspots.
        .executableTarget(name: "sandbox-demo", dependencies: ["LuaSandbox"], swiftSettings: swiftSettings),
        // What several test targets share: waiting on conditions, blocking work off Swift
        // concurrency's threads, scratch files, reading events by kind, background services
        // (a private bus) started with Spawning's signal reset, so SIGTERM stops them.
        .target(name: "TestSupport", dependencies: ["HotspotCore", "Spawning", "Locking"], path: "Tests/TestSupport", swiftSettings: swiftSettings),
        // How the tests and the bench run a real NetworkManager in network namespaces: the files
        // and scripts of each step, with no dependency, so the bench (a package of its own) can
        // use it as well.
        .target(name: "TestbedRecipes", path: "Tests/TestbedRecipes", swiftSettings: swiftSettings),
        .testTarget(
            name: "HotspotRuntimeTests",
            dependencies: [
                "HotspotCore", "HotspotRuntime", "HotspotNetwork", "ScriptContract", "ScriptLibraries", "PortalSimulator", "TestSupport", "Locking",
            ],
            swiftSettings: swiftSettings),
        .testTarget(
            name: "HotspotNetworkTests",
            dependencies: [
                "HotspotCore", "HotspotNetwork", "ScriptLibraries", "LuaSandbox", "HotspotRuntime", "TestSupport", "Locking",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: swiftSettings),
        .testTarget(
            name: "PortalSimulatorTests",
            dependencies: ["PortalSimulator", "TestSupport", .product(name: "Hummingbird", package: "hummingbird")],
            swiftSettings: swiftSettings),
        // Scenarios/ holds the venue scripts of the scenario tests.
        .testTarget(
            name: "HotspotCLITests", dependencies: ["LuaSandbox", "PortalSimulator", "Spawning", "TestSupport", "TestbedRecipes", "Locking"],
            exclude: ["Scenarios"],
            swiftSettings: swiftSettings),
        .testTarget(name: "SpawningTests", dependencies: ["Spawning"], swiftSettings: swiftSettings),
        .testTarget(name: "HotspotSystemTests", dependencies: ["HotspotSystem", "TestSupport", "Locking"], swiftSettings: swiftSettings),
        .testTarget(name: "HotspotMetricsTests", dependencies: ["HotspotMetrics", "HotspotCore"], swiftSettings: swiftSettings),
        .testTarget(name: "HotspotCoreTests", dependencies: ["HotspotCore", "TestSupport", "Locking"], swiftSettings: swiftSettings),
        .testTarget(name: "LuaSandboxTests", dependencies: ["LuaSandbox", "TestSupport", "Locking"], swiftSettings: swiftSettings),
    ]
)
