-- The entries the runtime calls in a helper's state (ScriptNames.Entry), last of the prelude's
-- files (see contract.lua): dispatch runs a command's handler, describe reads what a script
-- returned.

-- A command comes in two tables: the helper's own (`context`, `store`) and what every
-- helper it goes to gets (`type`, `network`, `network_list`, `answers`), which the
-- runtime encodes once for all of them; or whole, in the first.
local function dispatch(exports, own, shared)
  local command = shared or own
  -- The context is set by the runtime; kept in the record, out of the script's reach.
  local context = own[HELPER_KEY.context] or {}
  context[HOSTS] = context[HOSTS] or {}
  -- The nil fields size the table for what the handler sets later.
  local record = {
    type = command[COMMAND_KEY.type], context = context, session = command[COMMAND_KEY.session],
    store_data = own[HELPER_KEY.store] or {}, confidences = nil, delivered = nil,
  }
  local network, list = command[COMMAND_KEY.network], command[COMMAND_KEY.networkList]
  if network then adopt_network(network, record) end
  if list then
    for _, listed in ipairs(list) do adopt_network(listed, record) end
  end
  local kind = command[COMMAND_KEY.type]
  local cmd = setmetatable({
    [COMMAND_KEY.type] = kind, [COMMAND_KEY.network] = network, [COMMAND_KEY.networkList] = list,
    [COMMAND_KEY.answers] = command[COMMAND_KEY.answers],
  }, COMMAND)
  commands[cmd] = record

  local handler = rawget(exports, kind)
  local result, problem, confidence, claims, questions
  if type(handler) ~= "function" then
    result = RESULT.commandNotRecognized
  else
    local returned, asked = handler(cmd)
    if not record.delivered then
      -- Shorthands: an undelivered response, a result name, or for evaluate a confidence.
      if type(returned) == "table" and type(returned.deliver) == "function" then
        returned:deliver()
      elseif kind == HANDLER.evaluate and CONFIDENCES[returned] then
        result, confidence = RESULT.success, returned
      elseif RESULTS[returned] then
        result = returned
        -- `return "ui_required", { title =, fields = ... }`: what to ask the person.
        if returned == RESULT.uiRequired then questions = asked end
      elseif type(returned) == "string" then
        result, problem = RESULT.failure, "the handler returned unknown result '" .. returned .. "'; use one of " .. RESULT_NAMES
          .. (kind == HANDLER.evaluate and ", or a confidence (none, low, high)" or "")
      end
    end
    local delivered = record.delivered
    if delivered then
      result, confidence, claims = delivered.result, delivered.confidence, delivered.claims
    elseif result == nil then
      result, problem = RESULT.failure, "no response delivered"
    end
  end
  -- The answer as plain values, the cheapest to carry back, in the order of ScriptNames.Answer:
  -- the result, an error, the network's confidence, the networks claimed (filter_scan_list),
  -- the store if it changed, the questions for the person (ScriptContractTests checks it).
  return result, problem, confidence, claims, record.store and record.store.changed and record.store.data or nil,
    questions
end

-- The requests the helper's session made, kept for a recording of a failed attempt
-- (run --record-failures), handed over and forgotten. The session is the command's, as
-- io_context gives it to cmd:http.
local function exchanges(_, own, shared)
  local context = own[HELPER_KEY.context] or {}
  context[SESSION] = (shared or own)[COMMAND_KEY.session]
  return http_exchanges(context)
end

-- The keys a script's returned table may have: its handlers and the other fields.
local RECOGNISED = {}
for _, name in pairs(HANDLER) do RECOGNISED[name] = true end
for _, name in pairs(FIELD) do RECOGNISED[name] = true end

local function describe(exports)
  if type(exports) ~= "table" then return { [DESCRIBED.returned] = type(exports) } end
  local handlers, unknown = {}, {}
  for _, name in pairs(HANDLER) do
    local value = rawget(exports, name)
    if value ~= nil then handlers[name] = type(value) end
  end
  for key in next, exports do
    if not RECOGNISED[key] then unknown[#unknown + 1] = tostring(key) end
  end
  local hosts = rawget(exports, FIELD.hosts)
  local host_list
  if type(hosts) == "table" then
    host_list = {}
    for i, host in ipairs(hosts) do host_list[i] = type(host) == "string" and host or { type(host) } end
  end
  local name = rawget(exports, FIELD.name)
  return {
    [DESCRIBED.returned] = "table", [DESCRIBED.name] = type(name) == "string" and name or nil,
    [DESCRIBED.nameType] = type(name), [DESCRIBED.hosts] = host_list, [DESCRIBED.hostsType] = type(hosts),
    [DESCRIBED.handlers] = handlers, [DESCRIBED.unknown] = unknown, [DESCRIBED.ui] = rawget(exports, FIELD.ui),
    [DESCRIBED.networks] = rawget(exports, FIELD.networks),
  }
end

return { [ENTRY.dispatch] = dispatch, [ENTRY.describe] = describe, [ENTRY.exchanges] = exchanges }
