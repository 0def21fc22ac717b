// swift-tools-version: 6.1
import PackageDescription

// `make fuzz`: a libFuzzer target for each parser of what others write (portal pages, JSON,
// the worker protocol, the control socket, the files the daemon reads). A package of its own,
// as Benchmarks/ is, so that building and testing the project does not build it; the Makefile
// builds it instrumented (docs/FUZZING.md).
let swiftSettings: [SwiftSetting] = [
    .enableUpcomingFeature("ExistentialAny"),
    .enableUpcomingFeature("InternalImportsByDefault"),
]

/// `fuzz-NAME`, from Sources/NAME, whose seed corpus is Corpus/NAME.
func fuzzTarget(_ name: String, _ dependencies: [String]) -> Target {
    .executableTarget(
        name: "fuzz-\(name)",
        dependencies: ["FuzzSupport"] + dependencies.map { .product(name: $0, package: "hotspot-helper") },
        path: "Sources/\(name)", swiftSettings: swiftSettings)
}

let package = Package(
    name: "hotspot-helper-fuzz",
    platforms: [.macOS(.v15)],
    dependencies: [.package(name: "hotspot-helper", path: "..")],
    targets: [
        // libFuzzer's driver, which the toolchain's libFuzzer has: declared here, linked by
        // FuzzSupport's `-sanitize=fuzzer`.
        .systemLibrary(name: "CLibFuzzer"),
        .target(
            name: "FuzzSupport",
            dependencies: [
                "CLibFuzzer",
                .product(name: "LuaSandbox", package: "hotspot-helper"),
                .product(name: "ScriptLibraries", package: "hotspot-helper"),
            ],
            swiftSettings: swiftSettings,
            // Only the fuzz targets link libFuzzer: every other executable of the build (the
            // EmbedLua plugin's tool) keeps a main of its own.
            linkerSettings: [.unsafeFlags(["-sanitize=fuzzer"])]),
        fuzzTarget("wispr", ["HotspotNetwork", "ScriptLibraries"]),
        fuzzTarget("html-forms", []),
        fuzzTarget("html-text", []),
        fuzzTarget("html-meta-refresh", []),
        fuzzTarget("json-decode", []),
        fuzzTarget("captive-portal-api", ["HotspotNetwork"]),
        fuzzTarget("lua-values", ["LuaSandbox"]),
        fuzzTarget("worker-frames", ["LuaSandbox"]),
        fuzzTarget("control-request", ["HotspotControl"]),
        fuzzTarget("control-reply", ["HotspotControl"]),
        fuzzTarget("text-escaping", ["HotspotCore", "HotspotRuntime"]),
        fuzzTarget("secrets-file", ["HotspotRuntime"]),
        fuzzTarget("state-files", ["HotspotRuntime", "HotspotCore"]),
    ]
)
