public import LuaSandbox
import ScriptContract

/// What the prelude's `dispatch` returns, read by the positions `ScriptNames.Answer`
/// declares.
public struct DispatchAnswer: Sendable {
    public let result, error, confidence, claims, store, questions: LuaValue

    public init(_ values: [LuaValue]) {
        func value(_ named: ScriptNames.Answer) -> LuaValue { named.rawValue < values.count ? values[named.rawValue] : .nil }
        result = value(.result)
        error = value(.error)
        confidence = value(.confidence)
        claims = value(.claims)
        store = value(.store)
        questions = value(.questions)
    }
}

/// The trusted Lua that turns the engine's plain values into the venue-script contract:
/// `cmd`, `cmd.network`, `cmd:create_response(result)`, `deliver()`, `cmd.store`. It runs
/// in every helper's state before the script and keeps what it needs in locals, which no
/// script can reach. The runtime checks what comes back (`HelperResponse`); this code
/// only collects it and refuses misuse with errors that point at the script's line.
enum HelperPrelude {
    static let source = ScriptSource(chunkName: "=[hotspot-helper]", text: Array(text.utf8))

    /// The files of Prelude/, by topic, in the order they are joined into one chunk: each
    /// file's locals are the ones after it sees (one chunk, as the engine runs one prelude).
    static let files: [(name: String, text: String)] = [
        ("contract", EmbeddedLua.contract), ("methods", EmbeddedLua.methods), ("wispr", EmbeddedLua.wispr),
        ("splash", EmbeddedLua.splash), ("family", EmbeddedLua.family), ("entries", EmbeddedLua.entries),
    ]

    /// The files joined, after `CONTRACT`: what the prelude takes from the Swift side, put on
    /// the first file's first line (a comment) so that its line numbers stay the file's.
    static let text = "local CONTRACT = \(contract) " + files.map(\.text).joined()

    /// The names ScriptContract declares, so the prelude never spells them itself, the
    /// store's limit, and what each command may do (CommandPrivileges).
    static var contract: String {
        ScriptNames.luaTable(storeLimit: StateDirectory.storeLimit, lists: [
            ("without_network", CommandPrivileges.withoutNetwork.map(\.rawValue)),
            ("without_secrets", CommandPrivileges.withoutSecrets.map(\.rawValue)),
            ("scan_list_secrets", CommandPrivileges.scanListSecrets),
        ])
    }
}
