import Dispatch
import HotspotControl

/// The daemon's control socket, asked from async code.
struct DaemonLink: Sendable {
    let controlSocket: String

    /// The daemon's reply, or one saying why there is none. Blocking, so on a thread of its
    /// own (`ui` waits for the helper's present_ui).
    func send(_ request: ControlRequest) async -> ControlReply {
        await withCheckedContinuation { continuation in
            Self.queue.async { [controlSocket] in
                do throws(ControlSocketError) {
                    continuation.resume(returning: try ControlClient.send(request, to: controlSocket))
                } catch {
                    continuation.resume(returning: ControlReply(ok: false, message: error.description))
                }
            }
        }
    }

    private static let queue = DispatchQueue(label: "person-page.control", attributes: .concurrent)
}
