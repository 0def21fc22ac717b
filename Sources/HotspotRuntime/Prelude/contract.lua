-- The trusted Lua of the venue-script contract (see HelperPrelude.swift), in files by topic that
-- HelperPrelude.swift joins into one chunk in a fixed order, so each file's locals are the ones
-- after it sees: this one (the names the Swift side declares, a command's record, its networks,
-- its store and its responses), methods.lua (cmd's I/O methods), wispr.lua (the WISPr client),
-- splash.lua (following a portal's splash pages), family.lua (what
-- the gateway family helpers share), entries.lua (dispatch and describe). `CONTRACT`
-- is a local that HelperPrelude.swift puts before this comment, on this same line so that the
-- line numbers of errors in this file are its own: what the prelude takes from the Swift side.
local globals = ...
local type, pairs, ipairs, error, tostring, setmetatable, next = type, pairs, ipairs, error, tostring, setmetatable, next
local rawget, pcall = rawget, pcall

-- The names ScriptContract declares (ScriptNames), each group by the Swift case's name (ScriptNames.luaTable
-- writes them): a name no case declares is an error as the prelude loads, so the two sides
-- cannot drift apart (ScriptContractTests).
for group, names in pairs(CONTRACT) do
  if type(names) == "table" and names[1] == nil then
    setmetatable(names, { __index = function(_, name) error("ScriptNames declares no " .. group .. " " .. tostring(name), 2) end })
  end
end
local MODULE, ENTRY, FIELD, DESCRIBED = CONTRACT.module, CONTRACT.entry, CONTRACT.field, CONTRACT.description
local HELPER_KEY, COMMAND_KEY, NETWORK_KEY, CLAIM = CONTRACT.helper, CONTRACT.command, CONTRACT.network, CONTRACT.claim
local RESULT, HANDLER = CONTRACT.result, CONTRACT.handler

local http_request, http_probe, http_capport = host[MODULE.http].request, host[MODULE.http].probe, host[MODULE.http].capport
local http_exchanges = host[MODULE.http].exchanges
local wispr_parse, wispr_login_form = host[MODULE.wispr].parse, host[MODULE.wispr].login_form
local url_parse, url_resolve = host[MODULE.url].parse, host[MODULE.url].resolve
local sleep, now, max, min = host[MODULE.time].sleep, host[MODULE.time].now, math.max, math.min
local find, gsub, gmatch, lower = string.find, string.gsub, string.gmatch, string.lower
local socket_tcp, socket_udp = host[MODULE.socket].tcp, host[MODULE.socket].udp
local html_module = host[MODULE.html]
local html_forms, html_submission, html_links, html_meta_refresh =
  html_module.forms, html_module.submission, html_module.links, html_module.meta_refresh
local remove, concat = table.remove, table.concat

-- Libraries every script sees as globals.
globals.sleep = sleep
globals[MODULE.time] = readonly({ now = now }, MODULE.time)

-- The result names of CommandResult, in its order for the messages that list them.
local RESULTS, RESULT_NAMES = {}, nil
for _, name in ipairs(CONTRACT.results) do
  RESULTS[name] = true
  RESULT_NAMES = RESULT_NAMES and RESULT_NAMES .. ", " .. name or name
end
local CONFIDENCES = {}
for _, name in ipairs(CONTRACT.confidences) do CONFIDENCES[name] = true end
local STORE_LIMIT = CONTRACT.store_limit
-- The keys of the context (HelperContext.Key) the prelude reads or sets.
local HOSTS, SECRETS = CONTRACT.context.hosts, CONTRACT.context.secrets
local FOLLOWS_PORTAL, SESSION = CONTRACT.context.followsPortal, CONTRACT.context.session

-- The networks of each command (the tables the runtime sent, given methods), and the
-- command's record; what scripts set on them is kept in the record, by network.
-- Evaluate runs in every helper at every join, so this path makes no closures: the
-- methods are shared, and called with a colon (the error says so otherwise).
local network_records = setmetatable({}, { __mode = "k" })

-- What the prelude keeps about `object` (a network or a response) in `kept`. A method
-- called with a dot gets its first argument as `object`, and an error that says how.
local OWNERS = {
  network = "cmd.network and of the networks in cmd.network_list",
  response = "a response from cmd:create_response",
}
local function kept_for(kept, object, method, owner)
  local state = kept[object]
  if state == nil then
    error(method .. " is a method of " .. OWNERS[owner] .. ": call it with a colon, as in " .. owner .. ":" .. method .. "(...)", 3)
  end
  return state
end

local NETWORK = {
  __index = {
    set_confidence = function(network, level)
      local record = kept_for(network_records, network, "set_confidence", "network")
      if not CONFIDENCES[level] then
        error("set_confidence expects \"none\", \"low\" or \"high\", got " .. tostring(level), 2)
      end
      local confidences = record.confidences
      if confidences == nil then record.confidences = { [network] = level } else confidences[network] = level end
    end,
    set_password = function(network, password)
      local record = kept_for(network_records, network, "set_password", "network")
      if type(password) ~= "string" then error("set_password expects a string", 2) end
      local passwords = record.passwords
      if passwords == nil then record.passwords = { [network] = password } else passwords[network] = password end
    end,
  },
  __metatable = "network",
}

local function adopt_network(network, record)
  setmetatable(network, NETWORK)
  network_records[network] = record
  return network
end

-- What the prelude keeps about each live command, out of the script's reach: its context,
-- its store, what it delivered.
local commands = setmetatable({}, { __mode = "k" })

local function command_record(cmd, caller)
  local record = commands[cmd]
  if record == nil then error(caller .. " expects the command (cmd) as its first argument", 3) end
  return record
end

-- The command's store, counted on first use: `data` holds the values, `size` their bytes.
local function store_of(record)
  local store = record.store
  if store == nil then
    local size = 0
    for k, v in pairs(record.store_data) do size = size + #k + #v end
    store = { data = record.store_data, size = size, changed = false }
    record.store = store
  end
  return store
end

-- Keys starting with "@" are the runtime's (such as the WISPr logoff URL wispr.login
-- keeps): scripts read them, only this prelude writes them, through `store_put`.
local function store_put(record, key, value, level)
  local store = store_of(record)
  local old = store.data[key]
  local grown = store.size - (old and #key + #old or 0) + (value and #key + #value or 0)
  if grown > STORE_LIMIT then error("cmd.store is full (" .. STORE_LIMIT .. " bytes per helper and network)", level + 1) end
  store.size = grown
  store.data[key] = value
  store.changed = true
end

-- `cmd.store`: a proxy whose every write is checked.
local store_records = setmetatable({}, { __mode = "k" })
local STORE = {
  __index = function(proxy, key) return store_records[proxy].store_data[key] end,
  __newindex = function(proxy, key, value)
    if type(key) ~= "string" then error("cmd.store keys are strings", 2) end
    if value ~= nil and type(value) ~= "string" then error("cmd.store values are strings (store '" .. key .. "' as a string)", 2) end
    if key:sub(1, 1) == "@" then error("cmd.store keys starting with '@' are the runtime's; '" .. key .. "' cannot be set", 2) end
    store_put(store_records[proxy], key, value, 2)
  end,
  -- An iterator that does not hand out the data itself, which would skip the checks.
  __pairs = function(proxy)
    local data = store_records[proxy].store_data
    return function(_, key) return next(data, key) end, nil, nil
  end,
  __metatable = "cmd.store",
}

local function network_answer(network, record)
  local passwords, confidences = record.passwords, record.confidences
  return {
    [CLAIM.ssid] = network[NETWORK_KEY.ssid], [CLAIM.bssid] = network[NETWORK_KEY.bssid],
    [CLAIM.password] = passwords and passwords[network], [CLAIM.confidence] = confidences and confidences[network],
  }
end

-- Responses and what each holds: the command's record, the result, the network or list
-- it names, whether it was delivered.
local response_states = setmetatable({}, { __mode = "k" })

local RESPONSE = {
  __index = {
    set_network = function(response, net)
      local state = kept_for(response_states, response, "set_network", "response")
      if net == nil or network_records[net] ~= state.record then
        error("set_network expects a network from the command (cmd.network or cmd.network_list)", 2)
      end
      state.network = net
    end,
    set_network_list = function(response, nets)
      local state = kept_for(response_states, response, "set_network_list", "response")
      if type(nets) ~= "table" then error("set_network_list expects a list of networks", 2) end
      for _, net in ipairs(nets) do
        if network_records[net] ~= state.record then error("set_network_list expects networks from cmd.network_list", 2) end
      end
      state.network_list = nets
    end,
    deliver = function(response)
      local state = kept_for(response_states, response, "deliver", "response")
      if state.sent then error("deliver() works once: this response was already delivered", 2) end
      local record = state.record
      if record.delivered then error("this command already has a delivered response", 2) end
      state.sent = true
      -- The answer is fixed now: what the script sets on the networks later does not count.
      if state.network then
        local confidences = record.confidences
        state.confidence = confidences and confidences[state.network]
      end
      if state.network_list then
        local list = {}
        for i, net in ipairs(state.network_list) do list[i] = network_answer(net, record) end
        state.claims = list
      end
      record.delivered = state
    end,
  },
  __metatable = "response",
}

-- Reached from cmd's shared method (methods.lua) by a tail call, so level 2 is the script's line.
local function create_response(cmd, result)
  local record = commands[cmd]
  if record == nil then
    error("create_response is a method of cmd: call it with a colon, as in cmd:create_response(\"success\")", 2)
  end
  if not RESULTS[result] then
    error("unknown result '" .. tostring(result) .. "'; use one of " .. RESULT_NAMES, 2)
  end
  local response = setmetatable({}, RESPONSE)
  response_states[response] = {
    record = record, result = result, network = nil, network_list = nil, sent = nil, confidence = nil, claims = nil,
  }
  return response
end
