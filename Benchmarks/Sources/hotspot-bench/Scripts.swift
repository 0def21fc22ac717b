import LuaSandbox

/// The Lua the benchmarks run.
enum Scripts {
    /// A handler that does as little as a handler can.
    static let trivial = "return { f = function() return 1 end }"

    /// A small venue-like script: a few handlers and a table of strings, different for
    /// every venue so no two states hold the same text.
    static func venue(_ number: Int) -> String {
        let notices = (1...24).map { "        \"Venue \(number), notice \($0): doors, bar, cloakroom and Wi-Fi.\"," }
        return """
            local venue = {
                name = "Venue \(number)",
                notices = {
            \(notices.joined(separator: "\n"))
                },
            }
            local visits = 0
            return {
                on_enter = function(who)
                    visits = visits + 1
                    return venue.notices[visits % #venue.notices + 1] .. " Welcome, " .. who
                end,
                on_leave = function(who) return "Goodbye from " .. venue.name .. ", " .. who end,
                status = function() return { name = venue.name, visits = visits } end,
            }
            """
    }

    /// `spin` never returns and is stopped by the count hook; `ready` answers at once.
    static let spin = "return { spin = function() while true do end end, ready = function() return 1 end }"

    /// `overrun` stays inside one C call (a backtracking pattern) where the hook never
    /// runs, so only killing the worker stops it.
    static let overrun = """
        return {
            overrun = function() return ('a'):rep(3000):find('.-.-.-b') end,
            ready = function() return 1 end,
        }
        """
}

/// An engine as the hotspot configures it, with `workers` worker processes.
func makeEngine(workers: Int) throws -> LuaEngine {
    try LuaEngine(.init(
        workerExecutable: HelperCommand.projectExecutable("lua-sandbox-worker"),
        workerCount: workers, memoryLimit: 32 << 20, defaultDeadline: .seconds(45),
        killGrace: .milliseconds(200)))
}

extension Scripts {
    /// A venue script as the runtime loads it: `evaluate` is one lookup in a table of the
    /// SSIDs it knows (its own venue's, plus `claims`), `authenticate` and `maintain`
    /// answer `success` at once.
    static func helper(_ number: Int, claims: [String] = []) -> String {
        let known = (["Venue-\(number)"] + claims).map { "[\"\($0)\"] = \"high\"" }.joined(separator: ", ")
        return """
            local known = { \(known) }
            return {
                name = "V\(number)",
                hosts = { "portal.example" },
                evaluate = function(cmd)
                    cmd.network:set_confidence(known[cmd.network.ssid] or "none")
                    local r = cmd:create_response("success")
                    r:set_network(cmd.network)
                    r:deliver()
                end,
                authenticate = function(cmd) return "success" end,
                maintain = function(cmd) return "success" end,
            }
            """
    }
}
