import LuaSandbox

/// The trusted Lua that turns the engine's plain values into the venue-script contract:
/// `cmd`, `cmd.network`, `cmd:create_response(result)`, `deliver()`, `cmd.store`. It runs
/// in every helper's state before the script and keeps what it needs in locals, which no
/// script can reach. The runtime checks what comes back (`HelperResponse`); this code
/// only collects it and refuses misuse with errors that point at the script's line.
enum HelperPrelude {
    static let source = ScriptSource(chunkName: "=[hotspot-helper]", text: Array(text.utf8))

    static let text = #"""
    local globals = ...
    local type, pairs, ipairs, error, tostring, setmetatable, next = type, pairs, ipairs, error, tostring, setmetatable, next
    local rawget, pcall = rawget, pcall
    local http_request, http_probe = host.http.request, host.http.probe
    local socket_tcp, socket_udp = host.socket.tcp, host.socket.udp

    -- Libraries every script sees as globals.
    globals.sleep = host.time.sleep
    globals.time = readonly({ now = host.time.now }, "time")

    local RESULTS = {
      success = true, failure = true, ui_required = true, command_not_recognized = true,
      authentication_required = true, unsupported_network = true, temporary_failure = true,
    }
    local RESULT_NAMES = "success, failure, ui_required, command_not_recognized, authentication_required, unsupported_network, temporary_failure"
    local CONFIDENCES = { none = true, low = true, high = true }
    local HANDLERS = { "filter_scan_list", "evaluate", "authenticate", "present_ui", "maintain", "logoff" }
    local STORE_LIMIT = \#(StateDirectory.storeLimit)

    -- Networks made by the runtime, and what scripts set on them.
    local function make_network(fields, known)
      local network = {
        ssid = fields.ssid, bssid = fields.bssid, signal_strength = fields.signal_strength,
        is_secure = fields.is_secure, did_auto_join = fields.did_auto_join,
        did_just_join = fields.did_just_join, is_chosen_helper = fields.is_chosen_helper,
      }
      local settings = {}
      known[network] = settings
      -- Both network:set_confidence("high") and network.set_confidence("high") work.
      function network.set_confidence(self, level)
        if level == nil and type(self) == "string" then level = self end
        if not CONFIDENCES[level] then
          error("set_confidence expects \"none\", \"low\" or \"high\", got " .. tostring(level), 2)
        end
        settings.confidence = level
      end
      function network.set_password(self, password)
        if password == nil and type(self) == "string" then password = self end
        if type(password) ~= "string" then error("set_password expects a string", 2) end
        settings.password = password
      end
      return network
    end

    local function make_store(data)
      local size = 0
      for k, v in pairs(data) do size = size + #k + #v end
      local changed = false
      local store = setmetatable({}, {
        __index = function(_, key) return data[key] end,
        __newindex = function(_, key, value)
          if type(key) ~= "string" then error("cmd.store keys are strings", 2) end
          if value ~= nil and type(value) ~= "string" then error("cmd.store values are strings (store '" .. key .. "' as a string)", 2) end
          local old = data[key]
          local grown = size - (old and #key + #old or 0) + (value and #key + #value or 0)
          if grown > STORE_LIMIT then error("cmd.store is full (" .. STORE_LIMIT .. " bytes per helper and network)", 2) end
          size = grown
          data[key] = value
          changed = true
        end,
        -- An iterator that does not hand out `data` itself, which would skip the checks.
        __pairs = function() return function(_, key) return next(data, key) end, nil, nil end,
        __metatable = "cmd.store",
      })
      return store, function() return changed and data or nil end
    end

    local function network_answer(network, known)
      local settings = known[network]
      return { ssid = network.ssid, bssid = network.bssid, password = settings.password, confidence = settings.confidence }
    end

    local function dispatch(exports, command)
      local known = {}
      local network = command.network and make_network(command.network, known)
      local list
      if command.network_list then
        list = {}
        for i, fields in ipairs(command.network_list) do list[i] = make_network(fields, known) end
      end
      local store, store_changes = make_store(command.store or {})
      local delivered
      local cmd = { type = command.type, network = network, network_list = list, store = store, answers = command.answers }
      -- Set by the runtime; kept in this closure, out of the script's reach.
      local context = command.context or {}
      local secrets = context.secrets or {}

      -- Both cmd:http{...} and cmd.http{...} work.
      function cmd.http(self, options)
        if options == nil and self ~= cmd then options = self end
        if type(options) ~= "table" then
          error("cmd:http expects a table of options, such as { url = \"https://portal.example/login\" }", 2)
        end
        local ok, response, message = pcall(http_request, context, options)
        if not ok then error(response, 2) end
        return response, message
      end

      function cmd.probe()
        return http_probe(context)
      end

      -- cmd:tcp(host, port, options) and cmd:udp(host, port, options); the dot forms work too.
      local function socket_opener(open)
        return function(self, host_name, port, options)
          if self ~= cmd then host_name, port, options = self, host_name, port end
          local ok, socket, message = pcall(open, context, host_name, port, options)
          if not ok then error(socket, 2) end
          return socket, message
        end
      end
      cmd.tcp = socket_opener(socket_tcp)
      cmd.udp = socket_opener(socket_udp)

      function cmd.secret(self, name)
        if name == nil and self ~= cmd then name = self end
        if type(name) ~= "string" then error("cmd:secret expects the secret's name", 2) end
        local value = secrets[name]
        if value == nil then
          error("no secret '" .. name .. "' in this helper's section of the secrets file", 2)
        end
        return value
      end

      function cmd.create_response(self, result)
        if result == nil and type(self) == "string" then result = self end
        if not RESULTS[result] then
          error("unknown result '" .. tostring(result) .. "'; use one of " .. RESULT_NAMES, 2)
        end
        local response = {}
        local chosen, chosen_list, sent
        function response.set_network(_, net)
          if known[net] == nil then error("set_network expects a network from the command (cmd.network or cmd.network_list)", 2) end
          chosen = net
        end
        function response.set_network_list(_, nets)
          if type(nets) ~= "table" then error("set_network_list expects a list of networks", 2) end
          for _, net in ipairs(nets) do
            if known[net] == nil then error("set_network_list expects networks from cmd.network_list", 2) end
          end
          chosen_list = nets
        end
        function response.deliver()
          if sent then error("deliver() works once: this response was already delivered", 2) end
          if delivered then error("this command already has a delivered response", 2) end
          sent = true
          delivered = { result = result }
          if chosen then delivered.network = network_answer(chosen, known) end
          if chosen_list then
            delivered.network_list = {}
            for i, net in ipairs(chosen_list) do delivered.network_list[i] = network_answer(net, known) end
          end
        end
        return response
      end

      local handler = rawget(exports, command.type)
      if type(handler) ~= "function" then
        return { result = "command_not_recognized", store = store_changes() }
      end
      local returned = handler(cmd)
      if not delivered then
        -- Shorthands: an undelivered response, a result name, or for evaluate a confidence.
        if type(returned) == "table" and type(returned.deliver) == "function" then
          returned:deliver()
        elseif command.type == "evaluate" and CONFIDENCES[returned] then
          delivered = { result = "success", network = { ssid = network.ssid, confidence = returned } }
        elseif RESULTS[returned] then
          delivered = { result = returned }
        end
      end
      local answer = delivered or { result = "failure", error = "no response delivered" }
      answer.store = store_changes()
      return answer
    end

    local function describe(exports)
      if type(exports) ~= "table" then return { returned = type(exports) } end
      local handlers, unknown = {}, {}
      local recognised = { name = true, hosts = true }
      for _, name in ipairs(HANDLERS) do
        recognised[name] = true
        local value = rawget(exports, name)
        if value ~= nil then handlers[name] = type(value) end
      end
      for key in next, exports do
        if not recognised[key] then unknown[#unknown + 1] = tostring(key) end
      end
      local hosts = rawget(exports, "hosts")
      local host_list
      if type(hosts) == "table" then
        host_list = {}
        for i, host in ipairs(hosts) do host_list[i] = type(host) == "string" and host or { type(host) } end
      end
      local name = rawget(exports, "name")
      return {
        returned = "table", name = type(name) == "string" and name or nil,
        name_type = type(name), hosts = host_list, hosts_type = type(hosts),
        handlers = handlers, unknown = unknown,
      }
    end

    return { dispatch = dispatch, describe = describe }
    """#
}
