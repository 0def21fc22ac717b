@testable import HotspotRuntime
import HotspotCore
import LuaSandbox
import ScriptContract
import ScriptLibraries
import Testing
import TestSupport

/// The names ScriptContract declares are the ones the prelude reads and the libraries
/// register, and the answer comes back in the order it declares.
@Suite struct ScriptContractTests {
    /// Every `CONTRACT.group.name` the prelude spells, and every `ALIAS.name` of a local bound
    /// to a group (`local NETWORK_KEY = CONTRACT.network`), is a case ScriptContract declares.
    @Test func everyNameThePreludeReadsIsDeclared() {
        let lua = HelperPrelude.text
        var groupOfAlias: [Substring: Substring] = [:]
        for match in lua.matches(of: #/local ((?:[A-Z_]+, )*[A-Z_]+) = ((?:CONTRACT\.[a-z]+, )*CONTRACT\.[a-z]+)\n/#) {
            let aliases = match.1.split(separator: ", ")
            let groups = match.2.split(separator: ", ").map { $0.dropFirst("CONTRACT.".count) }
            for (alias, group) in zip(aliases, groups) { groupOfAlias[alias] = group }
        }
        #expect(groupOfAlias["NETWORK_KEY"] == "network")
        var read: [(group: Substring, name: Substring)] = lua.matches(of: #/CONTRACT\.([a-z]+)\.([A-Za-z]+)/#).map { ($0.1, $0.2) }
        for match in lua.matches(of: #/\b([A-Z_]+)\.([A-Za-z]+)/#) {
            if let group = groupOfAlias[match.1] { read.append((group, match.2)) }
        }
        #expect(read.count > 40)
        let undeclared = read.filter { ScriptNames.namesByGroup[String($0.group)]?[String($0.name)] == nil }
        #expect(undeclared.isEmpty, "the prelude reads names ScriptContract does not declare: \(undeclared.map { "\($0.group).\($0.name)" })")
    }

    @Test func theLibrariesRegisterTheDeclaredModules() {
        #expect(ScriptLibraries.modules.map(\.name).sorted() == ScriptNames.HostModuleName.allCases.map(\.rawValue).sorted())
        for module in ScriptLibraries.modules {
            #expect(module.isPublic == ScriptNames.HostModuleName(rawValue: module.name)?.isPublic, "\(module.name)")
        }
    }

    /// A state built with the helpers' prelude answers each value where `ScriptNames.Answer`
    /// puts it, as the runtime reads it.
    @Test func theAnswerComesBackInTheDeclaredOrder() async throws {
        typealias Command = ScriptNames.CommandKey
        let script = """
            return {
              filter_scan_list = function(cmd)
                cmd.store.seen = "yes"
                local listed = cmd.network_list[1]
                listed:set_password("latte")
                local response = cmd:create_response("success")
                response:set_network_list({ listed })
                response:deliver()
              end,
              evaluate = function(cmd) return "high" end,
              authenticate = function(cmd) return "ui_required", { title = "Room", fields = { { name = "room", label = "Room" } } } end,
              maintain = function(cmd) return "nonsense" end,
            }
            """
        func command(_ type: HotspotCommand) -> LuaValue {
            var table = LuaTable()
            table[Command.type] = .text(type.rawValue)
            let network = ScriptTransport.networkValue(
                NetworkDescription(ssid: "Cafe", bssid: "02:00:00:00:00:01"), didJustJoin: false, isChosen: false)
            if type == .filterScanList { table[Command.networkList] = .table(LuaTable(array: [network])) } else { table[Command.network] = network }
            return .table(table)
        }
        let commands = [HotspotCommand.filterScanList, .evaluate, .authenticate, .maintain].map(command)
        let outcomes = try await onOwnThread {
            let state = try SandboxedState(memoryLimit: 16 << 20, modules: ScriptLibraries.modules, prelude: HelperPrelude.source)
            _ = try state.load(ScriptSource(path: "venue.lua", text: script)).get()
            return commands.map { state.call(ScriptNames.Entry.dispatch.rawValue, [$0]) }
        }
        let (claimed, store) = ScriptTransport.interpret(outcomes[0])
        #expect(claimed.result == .success)
        #expect(claimed.claims == [ScannedNetwork(ssid: "Cafe", bssid: "02:00:00:00:00:01", password: "latte")])
        #expect(store == ["seen": "yes"])
        #expect(ScriptTransport.interpret(outcomes[1]).0.confidence == .high)
        #expect(ScriptTransport.interpret(outcomes[2]).0.questions?.title == "Room")
        let refused = ScriptTransport.interpret(outcomes[3]).0
        #expect(refused.result == .failure)
        #expect(refused.error?.contains("unknown result 'nonsense'") == true)
    }
}
