#if canImport(Glibc)
import Glibc
#endif
import Foundation
import Spawning

/// A real headless Chromium, driven over the DevTools protocol on a pipe
/// (`--remote-debugging-pipe`: JSON messages ending in NUL, written to its descriptor 3 and
/// read from its descriptor 4), so a test sees a page as a person's browser runs it.
/// Blocking: use it on a thread of its own (`onOwnThread`).
public final class HeadlessBrowser: @unchecked Sendable {
    public static let executable = "/usr/bin/chromium"

    private let pid: Int32
    private let commands: Int32
    private let replies: Int32
    private var nextID = 0
    private var buffered: [UInt8] = []
    private var session: String?
    private let profile: String
    /// The DevTools events received so far (a domain's, once enabled), oldest first.
    public private(set) var events: [[String: Any]] = []

    public struct Failure: Error, CustomStringConvertible {
        public let description: String
        public init(description: String) { self.description = description }
    }

    public static var isInstalled: Bool { access(executable, X_OK) == 0 }

    /// `arguments` are added to Chromium's own (`--host-resolver-rules=...`, say); `launcher`
    /// runs it (`ip netns exec NAMESPACE`, say, so it browses from a client's network), its
    /// last element taking Chromium's path and arguments and leaving descriptors 3 and 4 open.
    public init(arguments: [String] = [], launcher: [String] = []) throws {
        guard let toBrowser = closeOnExecPipe(), let fromBrowser = closeOnExecPipe() else {
            throw Failure(description: "no pipe: \(String(cString: strerror(errno)))")
        }
        profile = NSTemporaryDirectory() + "chromium-\(UUID().uuidString)"
        do {
            let command = launcher + [Self.executable]
            pid = try spawnProcess(command[0], arguments: Array(command.dropFirst()) + [
                "--headless=new", "--no-sandbox", "--disable-gpu", "--no-first-run", "--no-default-browser-check",
                "--remote-debugging-pipe", "--user-data-dir=\(profile)", "--window-size=1000,1300",
            ] + arguments + ["about:blank"], descriptors: [
                .open("/dev/null", flags: O_RDONLY, as: 0), .open("/dev/null", flags: O_WRONLY, as: 1),
                .open("/dev/null", flags: O_WRONLY, as: 2),
                .duplicate(toBrowser.readEnd, as: 3), .duplicate(fromBrowser.writeEnd, as: 4),
            ])
        } catch {
            throw Failure(description: "chromium did not start: \(error)")
        }
        close(toBrowser.readEnd)
        close(fromBrowser.writeEnd)
        commands = toBrowser.writeEnd
        replies = fromBrowser.readEnd
    }

    deinit {
        kill(pid, SIGKILL)
        var status: Int32 = 0
        waitpid(pid, &status, 0)
        close(commands)
        close(replies)
        try? FileManager.default.removeItem(atPath: profile)
    }

    /// Sends a DevTools command and returns its result (to the page once `open` attached).
    @discardableResult
    public func send(_ method: String, _ parameters: [String: Any] = [:], toPage: Bool = true) throws -> [String: Any] {
        nextID += 1
        var message: [String: Any] = ["id": nextID, "method": method, "params": parameters]
        if toPage, let session { message["sessionId"] = session }
        var bytes = Array(try JSONSerialization.data(withJSONObject: message))
        bytes.append(0)
        guard bytes.withUnsafeBytes({ write(commands, $0.baseAddress, $0.count) }) == bytes.count else {
            throw Failure(description: "chromium stopped reading")
        }
        while true {
            let reply = try nextMessage()
            guard reply["id"] as? Int == nextID else {  // events and others' replies
                if reply["method"] != nil { events.append(reply) }
                continue
            }
            if let error = reply["error"] as? [String: Any] { throw Failure(description: "\(method): \(error)") }
            return reply["result"] as? [String: Any] ?? [:]
        }
    }

    private func nextMessage() throws -> [String: Any] {
        var chunk = [UInt8](repeating: 0, count: 65536)
        while true {
            if let end = buffered.firstIndex(of: 0) {
                defer { buffered.removeFirst(end + 1) }
                return (try JSONSerialization.jsonObject(with: Data(buffered[..<end]))) as? [String: Any] ?? [:]
            }
            var poller = pollfd(fd: replies, events: Int16(POLLIN), revents: 0)
            guard poll(&poller, 1, 30_000) > 0 else { throw Failure(description: "chromium gave no reply within 30 s") }
            let count = read(replies, &chunk, chunk.count)
            guard count > 0 else { throw Failure(description: "chromium ended") }
            buffered += chunk[..<count]
        }
    }

    /// Opens `url` in a new tab, which later commands go to.
    public func open(_ url: String) throws {
        let target = try send("Target.createTarget", ["url": url], toPage: false)
        let attached = try send("Target.attachToTarget", ["targetId": target["targetId"] as? String ?? "", "flatten": true], toPage: false)
        session = attached["sessionId"] as? String
    }

    /// The value of a JavaScript expression in the page (awaited when it is a promise).
    @discardableResult
    public func evaluate(_ expression: String) throws -> Any? {
        let result = try send("Runtime.evaluate", ["expression": expression, "awaitPromise": true, "returnByValue": true])
        if let exception = result["exceptionDetails"] as? [String: Any] { throw Failure(description: "\(expression): \(exception)") }
        return (result["result"] as? [String: Any])?["value"]
    }

    /// Waits until `expression` is true in the page.
    public func waitUntil(_ expression: String, within limit: Duration = .seconds(20)) throws {
        guard try holdsBlocking(within: limit, { try evaluate(expression) as? Bool == true }) else {
            let text = (try? evaluate("document.body.innerText")) as? String ?? ""
            throw Failure(description: "never true within \(limit): \(expression)\nthe page shows:\n\(text)")
        }
    }

    /// Saves what the page shows as a PNG.
    public func screenshot(to path: String) throws {
        let shot = try send("Page.captureScreenshot", ["format": "png", "captureBeyondViewport": true])
        guard let data = Data(base64Encoded: shot["data"] as? String ?? "") else { throw Failure(description: "no screenshot") }
        try FileManager.default.createDirectory(atPath: (path as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
        try data.write(to: URL(fileURLWithPath: path))
    }
}
