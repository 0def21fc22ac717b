import FuzzSupport
import HotspotRuntime

/// A secrets file, read as the daemon reads it, and its secrets taken out of a text.
@main enum SecretsFileFuzzTarget {
    static func main() {
        let file = ScratchDirectory.path + "/secrets.ini"
        fuzz { text in
            ScratchDirectory.write(text, to: "secrets.ini")
            guard let secrets = try? Secrets.load(path: file) else { return }
            _ = secrets.redact(String(decoding: text, as: UTF8.self))
        }
    }
}
