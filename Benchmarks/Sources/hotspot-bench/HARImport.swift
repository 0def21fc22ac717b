#if canImport(Glibc)
import Glibc
#endif
import LuaSandbox

/// `hotspot-helper har import` of a 10 MB recording, as a whole process: its wall time and
/// its peak resident memory (the kernel's `ru_maxrss`). The recording is a portal login
/// among what a browser fetches meanwhile: pages with a form each, scripts, styles, images
/// in base64 and tracking pixels with queries, every one of which the import weighs as a
/// possible step of the login.
func measureHARImport(runs: Int = 5) throws -> [Figure] {
    let directory = try ScratchDirectory()
    defer { directory.remove() }
    let har = HARImportBench.recording(bytes: 10_000_000)
    let path = try directory.write(har, to: "login.har")
    var times: [Double] = []
    var peaks: [Int] = []
    // Run 0 only warms the page cache.
    for run in 0...runs {
        let start = Deadline.now.nanoseconds
        let child = try ChildProcess([HelperCommand.path, "har", "import", path])
        child.closeInput()
        var output: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 1 << 14)
        while case let count = child.receive(into: &chunk), count > 0 { output += chunk[0..<count] }
        var status: Int32 = 0
        var usage = rusage()
        while wait4(child.pid, &status, 0, &usage) < 0, errno == EINTR {}
        let elapsed = nanoseconds(since: start)
        let report = String(decoding: output, as: UTF8.self)
        guard status == 0, report.contains("step 1      form POST") else {
            throw BenchError("har import failed (wait status \(status)): \(report.suffix(400))")
        }
        guard run > 0 else { continue }
        times.append(elapsed)
        peaks.append(usage.ru_maxrss * 1024)
    }
    let time = Samples(times)
    let peak = peaks.max() ?? 0
    return [Figure(
        name: "HAR import, 10 MB",
        result: "median \(duration(nanoseconds: time.median)), max \(duration(nanoseconds: time.maximum)); peak RSS \(mebibytes(peak)) (\(har.utf8.count / 1_000_000) MB, n=\(runs))",
        goals: [.init(text: "median < 1 s", met: time.median < 1e9), .init(text: "peak < 64 MiB", met: peak < 64 << 20)])]
}

enum HARImportBench {
    /// A HAR 1.2 of at least `bytes`: a probe sent to a login form, what the browser loaded
    /// meanwhile, the form posted, the probe open.
    static func recording(bytes: Int) -> String {
        var entries: [String] = []
        var size = 0
        func add(_ method: String, _ url: String, status: Int, mimeType: String, body: String, base64: Bool = false,
                 headers: [(String, String)] = [], postData: String? = nil) {
            let second = entries.count
            let header = headers.map { #"{"name":"\#($0.0)","value":"\#($0.1)"}"# }.joined(separator: ",")
            let post = postData.map { #","postData":{"mimeType":"application/x-www-form-urlencoded","text":"\#($0)"}"# } ?? ""
            let encoding = base64 ? #","encoding":"base64""# : ""
            let entry = #"{"startedDateTime":"2026-11-28T12:\#(pad(second / 60 % 60)):\#(pad(second % 60)).000Z","time":12.5,"#
                + #""request":{"method":"\#(method)","url":"\#(url)","httpVersion":"HTTP/1.1","headers":[],"queryString":[],"cookies":[],"#
                + #""headersSize":-1,"bodySize":\#(postData?.utf8.count ?? 0)\#(post)},"#
                + #""response":{"status":\#(status),"statusText":"","httpVersion":"HTTP/1.1","headers":[\#(header)],"cookies":[],"#
                + #""content":{"size":\#(body.utf8.count),"mimeType":"\#(mimeType)","text":"\#(body)"\#(encoding)},"redirectURL":"","#
                + #""headersSize":-1,"bodySize":\#(body.utf8.count)},"cache":{},"timings":{"send":0,"wait":10,"receive":2.5}}"#
            entries.append(entry)
            size += entry.utf8.count
        }
        func pad(_ value: Int) -> String { value < 10 ? "0\(value)" : "\(value)" }
        let form = #"<form method='post' action='/login'><input type='hidden' name='csrf_token' value='9f2c41d8a7be4e1c8d0a'>"#
            + #"<input type='text' name='username'><input type='password' name='password'><button type='submit'>Log in</button></form>"#
        add("GET", "http://connectivitycheck.gstatic.com/generate_204", status: 302, mimeType: "text/html", body: "",
            headers: [("Location", "http://portal.example/login")])
        add("GET", "http://portal.example/login", status: 200, mimeType: "text/html", body: "<html><body>\(form)</body></html>",
            headers: [("Set-Cookie", "portal_session=c00kie7a1b2c3d4e5f6; Path=/")])
        var index = 0
        while size < bytes {
            index += 1
            let paragraph = "<div class='terms'><a href='/terms?part=\(index)'>Terms</a> of use, part \(index), lorem ipsum dolor sit amet.</div>"
            add("GET", "http://portal.example/page\(index)", status: 200, mimeType: "text/html",
                body: "<html><body>" + String(repeating: paragraph, count: 200) + form + "</body></html>")
            add("GET", "http://portal.example/pixel.gif?visit=\(index)&session=abc\(index)xyz", status: 200, mimeType: "image/gif",
                body: "R0lGODlhAQABAAAAACw=", base64: true)
            add("GET", "http://portal.example/static/app\(index).js", status: 200, mimeType: "application/javascript",
                body: String(repeating: "function f\(index)(a) { return a * 2; }\\n", count: 400))
            add("GET", "http://portal.example/static/photo\(index).jpg", status: 200, mimeType: "image/jpeg",
                body: String(repeating: "/9j/4AAQSkZJRgABAQEASABIAAD", count: 600), base64: true)
        }
        add("POST", "http://portal.example/login", status: 200, mimeType: "text/html", body: "<p id=connected>You are connected.</p>",
            postData: "csrf_token=9f2c41d8a7be4e1c8d0a&username=jane.doe.guest&password=s3cret-Pa55word")
        add("GET", "http://connectivitycheck.gstatic.com/generate_204", status: 204, mimeType: "x-unknown", body: "")
        return #"{"log":{"version":"1.2","creator":{"name":"hotspot-bench","version":"1"},"pages":[],"entries":["#
            + entries.joined(separator: ",") + "]}}"
    }
}
