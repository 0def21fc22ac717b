#if canImport(Glibc)
import Glibc
#endif
import LuaSandbox

/// `demo`, `dev` and `simulate` run the portal simulator (Hummingbird and SwiftNIO), which
/// a device has no use for: they live in `hotspot-helper-devtools`, so the executable the
/// daemon runs stays small (docs/PERFORMANCE.md, "The idle daemon's memory is mostly shared
/// code", has what it saves). `hotspot-helper NAME ...` runs that executable, beside it,
/// with the same arguments.
package enum DevTools {
    package static let executableName = "hotspot-helper-devtools"

    package static let demoAbstract = "Runs the bundled venue scripts through their whole lifecycle on the portal simulator."
    package static let devAbstract = "Runs a script's lifecycle against a simulated or real portal, again on every save."
    package static let simulateAbstract = "Runs simulated captive portals to develop and test venue scripts against."

    /// Replaces this process with the devtools executable running `arguments` (the
    /// command's name first); exits 2 saying what is missing when it is not there.
    package static func replaceProcess(running arguments: [String]) -> Never {
        let path = LuaEngine.Configuration.executableBesideCurrent(named: executableName)
        var argv = ([path] + arguments).map { strdup($0) } + [nil]
        execv(path, &argv)
        let reason = String(cString: strerror(errno))
        writeUnbuffered("hotspot-helper: `\(arguments.first ?? "")` runs \(path), which cannot start (\(reason)); "
            + "it is built beside hotspot-helper by `swift build` (a device needs only hotspot-helper)\n",
            to: STDERR_FILENO)
        exit(2)
    }
}
