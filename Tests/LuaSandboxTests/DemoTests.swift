import Foundation
import LuaSandbox
import Testing

/// The engine's own example: it must exit 0 and tell each story.
@Test func theEngineDemonstrationEndsAsExpected() throws {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: LuaEngine.Configuration.executableBesideCurrent(named: "sandbox-demo"))
    let output = Pipe()
    process.standardOutput = output
    try process.run()
    let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
    process.waitUntilExit()
    #expect(process.terminationStatus == 0, "\(text)")
    #expect(text.contains("every script ended as expected"))
    #expect(!text.contains("FAIL"))
    #expect(text.contains("deadline_exceeded: deadline exceeded; stopped by ending its worker process"))
    #expect(text.contains("memory_limit: memory limit exceeded (32 MiB)"))
    #expect(text.contains("demo6.lua:4: attempt to index a nil value (local 'portal')"))
}
