// swift-tools-version: 6.1
import PackageDescription

// `make bench`: the engine and the runtime measured against the project's goals. A package
// of its own, as SwiftNIO and Hummingbird keep theirs, so that building and testing the
// project does not build the bench.
let package = Package(
    name: "hotspot-helper-benchmarks",
    platforms: [.macOS(.v15)],
    dependencies: [.package(name: "hotspot-helper", path: "..")],
    targets: [
        .executableTarget(
            name: "hotspot-bench",
            dependencies: [
                .product(name: "Spawning", package: "hotspot-helper"),
                .product(name: "LuaSandbox", package: "hotspot-helper"),
                .product(name: "HotspotCore", package: "hotspot-helper"),
                .product(name: "HotspotRuntime", package: "hotspot-helper"),
                .product(name: "HotspotNetwork", package: "hotspot-helper"),
                .product(name: "DBusClient", package: "hotspot-helper"),
                .product(name: "ServiceIntegration", package: "hotspot-helper"),
                .product(name: "HotspotMetrics", package: "hotspot-helper"),
                .product(name: "ScriptLibraries", package: "hotspot-helper"),
                .product(name: "PortalSimulator", package: "hotspot-helper"),
                .product(name: "TestbedRecipes", package: "hotspot-helper"),
            ],
            swiftSettings: [
                .enableUpcomingFeature("ExistentialAny"),
                .enableUpcomingFeature("InternalImportsByDefault"),
            ]),
    ]
)
