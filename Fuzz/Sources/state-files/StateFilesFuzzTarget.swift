import FoundationEssentials
import FuzzSupport
import HotspotCore
import HotspotRuntime

/// A state directory whose `state.json` and helper store both hold the input, opened as the
/// daemon opens it: a file it cannot read is set aside, never a failure. Once both read, what
/// it writes next reads back the same.
@main enum StateFilesFuzzTarget {
    static func main() {
        let path = ScratchDirectory.path + "/state"
        fuzz { bytes in
            ScratchDirectory.remove("state")
            let directory: StateDirectory
            do {
                try FileManager.default.createDirectory(atPath: path + "/store", withIntermediateDirectories: true)
                ScratchDirectory.write(bytes, to: "state/state.json")
                ScratchDirectory.write(bytes, to: "state/store/venue.json")
                directory = try StateDirectory(path: path)
            } catch {
                fatalError("the state directory does not open: \(error)")
            }
            guard directory.warnings.isEmpty else { return }
            do {
                try directory.update { $0.disabledHelpers.insert("fuzz") }
                try directory.setStore(["answer": "42"], helper: "venue", ssid: "Fuzz Cafe")
                let reopened = try StateDirectory(path: path)
                require(reopened.warnings.isEmpty, "what was written is set aside: \(reopened.warnings)")
                require(reopened.snapshot == directory.snapshot, "the state reads back otherwise")
                require(reopened.store(helper: "venue", ssid: "Fuzz Cafe") == ["answer": "42"], "the store reads back otherwise")
            } catch {
                fatalError("the state directory does not write: \(error)")
            }
        }
    }
}
