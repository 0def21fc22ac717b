#if canImport(Glibc)
import Glibc
#endif
import LuaSandbox

/// `demo`, `dev`, `simulate` and `test` run the portal simulator (Hummingbird and SwiftNIO),
/// and `har` reads recordings for it, which a device has no use for: they live in `hotspot-helper-devtools`, so the executable the
/// daemon runs stays small (docs/PERFORMANCE.md, "The idle daemon's memory is mostly shared
/// code", has what it saves). `hotspot-helper NAME ...` runs that executable, beside it,
/// with the same arguments.
package enum DevTools {
    package static let executableName = "hotspot-helper-devtools"

    package static let demoAbstract = "Runs the bundled venue scripts through their whole lifecycle on the portal simulator."
    package static let devAbstract = "Runs a script's lifecycle against a simulated or real portal, again on every save."
    package static let simulateAbstract = "Runs simulated captive portals to develop and test venue scripts against."
    package static let harAbstract = "Turns a browser's recording (HAR) of one portal login into a venue script."
    package static let testAbstract = "Runs venue scripts' lifecycles against simulator scenarios and recorded logins, and checks the outcome."

    /// `web` lives in an executable of its own for the same reason: the daemon a device runs
    /// has no web server in it.
    package static let webExecutableName = "hotspot-helper-web"
    package static let webAbstract = "Serves a page on loopback to see the running daemon and answer what its helpers ask of a person."

    /// Replaces this process with `executable` (found beside this one) running `arguments`
    /// (the command's name first); exits 2 saying what is missing when it is not there.
    package static func replaceProcess(running arguments: [String], executable: String = executableName) -> Never {
        let path = LuaEngine.Configuration.executableBesideCurrent(named: executable)
        var argv = ([path] + arguments).map { strdup($0) } + [nil]
        execv(path, &argv)
        let reason = String(cString: strerror(errno))
        writeUnbuffered("hotspot-helper: `\(arguments.first ?? "")` runs \(path), which cannot start (\(reason)); "
            + "it is built beside hotspot-helper by `swift build` (a device needs only hotspot-helper)\n",
            to: STDERR_FILENO)
        exit(2)
    }
}
