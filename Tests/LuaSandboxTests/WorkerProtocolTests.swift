@testable import LuaSandbox
import Testing

/// What a worker writes, read by the supervisor, which does not trust it.
@Suite struct WorkerProtocolTests {
    /// An outcome whose status no state gives (negative here) is a runtime error; it trapped
    /// the supervisor (found by `make fuzz`, worker-frames).
    @Test func anOutcomeWithAStatusNoStateGivesIsARuntimeError() throws {
        let sent = WorkerFrame.outcome(RawOutcome(status: -1, results: [], message: "no such status", location: "",
                                                  traceback: "", logs: [], droppedLogs: 0))
        let (_, frame) = try WorkerFrame.decode(Array(sent.encoded(id: 1).dropFirst(4)))
        guard case .outcome(let outcome) = frame else {
            Issue.record("decoded as \(frame)")
            return
        }
        let error = try #require(throws: LuaScriptError.self) { try outcome.decoded(memoryLimit: 1 << 20).get() }
        #expect(error.kind == .runtime)
        #expect(error.message == "no such status")
    }

    /// A table with a key no Lua table has (nil, NaN) is malformed, as a state's own decoder
    /// reads it. NaN keys, never equal to each other, were all kept, each one slower to insert
    /// than the last (found by `make fuzz`, lua-values).
    @Test(arguments: [LuaValue.nil, .number(.nan)])
    func aTableWithAKeyNoLuaTableHasIsMalformed(key: LuaValue) throws {
        let bytes = try LuaValueCodec.encode(tuple: [.table(LuaTable([key: true]))])
        #expect(throws: LuaValueCodec.MalformedError.self) { try LuaValueCodec.decode(tuple: bytes) }
    }
}
