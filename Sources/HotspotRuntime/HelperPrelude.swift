import HotspotCore
public import LuaSandbox
import ScriptContract

/// What the prelude's `dispatch` returns: the result's name, an error message, the network's
/// confidence (evaluate), the networks claimed (filter_scan_list, each a table of `ssid`,
/// `bssid`, `password`), and the helper's store when the handler changed it.
public struct DispatchAnswer: Sendable {
    /// The values, in the order `dispatch` returns them (plain values are the cheapest to
    /// carry back; prelude.lua's `dispatch` ends with them in this order).
    enum Value: Int {
        case result, error, confidence, claims, store, questions
    }

    public let result, error, confidence, claims, store, questions: LuaValue

    public init(_ values: [LuaValue]) {
        func value(_ named: Value) -> LuaValue { named.rawValue < values.count ? values[named.rawValue] : .nil }
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

    /// Prelude/prelude.lua, after `CONTRACT`: what the prelude takes from the Swift side, put
    /// on the file's first line (a comment) so that its line numbers stay the file's.
    static let text = "local CONTRACT = \(contract) " + EmbeddedLua.prelude

    /// The names the Swift enums hold, so the prelude never spells them itself: the results
    /// a handler may answer, the handlers a script may define, the context's keys (by the
    /// name of their case), the store's limit, and what each command may do.
    static var contract: String {
        func list(_ names: [String]) -> String { "{ " + names.map { "\"\($0)\"" }.joined(separator: ", ") + " }" }
        let contextKeys = HelperContext.Key.allCases.map { "\(String(describing: $0)) = \"\($0.rawValue)\"" }
        return """
            { results = \(list(CommandResult.allCases.map(\.rawValue))), handlers = \(list(HotspotCommand.allCases.map(\.rawValue))), \
            context = { \(contextKeys.joined(separator: ", ")) }, store_limit = \(StateDirectory.storeLimit), \
            without_network = \(list(CommandPrivileges.withoutNetwork.map(\.rawValue))), \
            without_secrets = \(list(CommandPrivileges.withoutSecrets.map(\.rawValue))), \
            scan_list_secrets = \(list(CommandPrivileges.scanListSecrets)) }
            """
    }
}
