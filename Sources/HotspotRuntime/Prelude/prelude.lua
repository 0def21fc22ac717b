-- The trusted Lua of the venue-script contract (see HelperPrelude.swift). `CONTRACT` is a local
-- that HelperPrelude.swift puts before this comment, on this same line so that the line numbers
-- of errors match this file: what the prelude takes from the Swift side.
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

-- The methods of `cmd`'s I/O (cmd:http and the like) are made on first use, each bound
-- to its command, so both the colon and the dot forms work (cmd:http{...} and
-- cmd.http{...}), and a command pays only for those its handler touches.
local function lazy_methods(makers, state_of, shared, protected_name)
  return {
    __index = function(object, key)
      local method = shared[key]
      if method ~= nil then return method end
      local make = makers[key]
      if make == nil then return nil end
      method = make(object, state_of[object])
      rawset(object, key, method)
      return method
    end,
    __metatable = protected_name,
  }
end

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

-- A helper whose `hosts` has "@portal" may reach the hosts the network names as its
-- portal during the command: the captive probe's redirect, the Captive Portal API's
-- URLs, the URLs of the WISPr messages wispr.login and wispr.logoff read. They are kept
-- ("@portal.hosts", the latest few) for its later commands on the network: maintain and
-- logoff run when the network is open and the probe names no portal, and a family helper
-- reaches the same gateway's status and logout pages then.
local PORTAL_HOSTS_KEY, KEPT_PORTAL_HOSTS = "@portal.hosts", 8
local function allow_host(record, host)
  local allowed = record.allowed_hosts
  if allowed == nil then
    allowed = {}
    for _, pattern in ipairs(record.context[HOSTS]) do allowed[pattern] = true end
    record.allowed_hosts = allowed
  end
  if allowed[host] then return false end
  allowed[host] = true
  local hosts = record.context[HOSTS]
  hosts[#hosts + 1] = host
  return true
end

local function allow_portal(record, address)
  if not record.context[FOLLOWS_PORTAL] then return end
  local host = type(address) == "string" and url_parse(address).host
  if not host or host == "" or not allow_host(record, host:lower()) then return end
  local kept = {}
  for known in gmatch(record.store_data[PORTAL_HOSTS_KEY] or "", "%S+") do
    if known ~= host:lower() then kept[#kept + 1] = known end
  end
  kept[#kept + 1] = host:lower()
  if #kept > KEPT_PORTAL_HOSTS then remove(kept, 1) end
  store_put(record, PORTAL_HOSTS_KEY, concat(kept, " "), 2)
end

-- The context a host function that reaches the network gets: the command's cookie
-- session is added, and the portal hosts kept from earlier commands, on the first such
-- call, so a command that makes none pays nothing.
local function io_context(record)
  local context = record.context
  if context[SESSION] == nil then
    context[SESSION] = record.session
    if context[FOLLOWS_PORTAL] then
      for host in gmatch(record.store_data[PORTAL_HOSTS_KEY] or "", "%S+") do allow_host(record, host) end
    end
  end
  return context
end

-- The HTML pages a generic helper read in this command, the latest few (they count against
-- the script's memory): cmd:submit lets it reach where a form of one of them is sent, and
-- nowhere a form the script made up names.
local KEPT_PAGES = 4
local function keep_page(record, response)
  if not record.context[FOLLOWS_PORTAL] then return end
  local kind = response.headers["content-type"]
  if not kind or not find(lower(kind), "html", 1, true) then return end
  local pages = record.pages
  if pages == nil then
    pages = {}
    record.pages = pages
  end
  if #pages == KEPT_PAGES then remove(pages, 1) end
  pages[#pages + 1] = response
end

local function allow_form_target(record, form)
  local pages = record.pages
  if pages == nil then return end
  local wanted = { [form.action] = true }
  for _, field in ipairs(form.fields) do
    if type(field) == "table" and field.formaction then wanted[field.formaction] = true end
  end
  for _, page in ipairs(pages) do
    for _, served in ipairs(html_forms(page.body, page.url)) do
      if wanted[served.action] then allow_portal(record, served.action) end
      for _, field in ipairs(served.fields) do
        if field.formaction and wanted[field.formaction] then allow_portal(record, field.formaction) end
      end
    end
  end
end

-- What cmd:submit passes on to cmd:http.
local SUBMIT_OPTIONS = { "timeout", "follow_redirects", "max_redirects", "max_body" }

globals.capport = readonly({
  -- What the network's RFC 8908 Captive Portal API says: a table, nil when the network
  -- has no API, or nil and a message prefixed as cmd:http's are.
  fetch = function(cmd)
    local record = command_record(cmd, "capport.fetch")
    local status, problem = http_capport(io_context(record))
    if status then
      allow_portal(record, status.user_portal_url)
      allow_portal(record, status.venue_info_url)
    end
    return status, problem
  end,
}, "capport")

-- The WISPr smart client: wispr.login, wispr.logoff, wispr.abort on top of cmd:http
-- and wispr.parse. Waits (Delay) count against the command's deadline.
local WISPR_RESULTS = {
  [50] = "success", [100] = "login_failed", [102] = "radius_error", [105] = "network_admin_error",
  [150] = "success", [151] = "aborted", [253] = "protocol_error", [254] = "protocol_error", [255] = "gateway_error",
}
local WISPR_LOGOFF_KEY, WISPR_ABORT_KEY = "@wispr.logoff_url", "@wispr.abort_login_url"
local WISPR_HOPS, WISPR_POLLS = 8, 64

local function wispr_outcome(reply, fallback)
  local code = reply.response_code
  return {
    result = WISPR_RESULTS[code] or fallback or "protocol_error", response_code = code,
    reply = reply.reply_message, message = reply,
  }
end

-- Fetches `address` and reads its WISPr message: message, or nil and the outcome to return.
local function wispr_fetch(cmd, request)
  local page, problem = cmd:http(request)
  if not page then return nil, nil, { result = "unreachable", reply = problem } end
  local message, broken = wispr_parse(page.body)
  if broken then return nil, page, { result = "protocol_error", reply = broken } end
  return message, page
end

local function wispr_delay(message)
  local delay = message.delay
  return (type(delay) == "number" and delay > 0) and delay or 0
end

local function wispr_login(cmd, options)
  local record = command_record(cmd, "wispr.login")
  if type(options) ~= "table" or type(options.username) ~= "string" or type(options.password) ~= "string" then
    error("wispr.login expects { username = \"...\", password = \"...\" }", 2)
  end
  local function allow(address) allow_portal(record, address) end
  local address = options.url
  if address == nil then
    local verdict = cmd:probe()
    if verdict.state == "connected" then return { result = "success", reply = "the network is already open" } end
    if not verdict.portal_url then
      return { result = "not_wispr", reply = "the probe found no portal (" .. tostring(verdict.state) .. ")" }
    end
    address = verdict.portal_url
  end
  allow(address)
  -- The Redirect (100), one hop at a time: the gateway may put it in a redirect's page,
  -- at the redirect's target, or behind a Proxy message (110) and its NextURL.
  local redirect
  for _ = 1, WISPR_HOPS do
    local message, page, outcome = wispr_fetch(cmd, { url = address, follow_redirects = false })
    if outcome then return outcome end
    if message and message.message == "redirect" then
      redirect = message
      break
    elseif message and message.message == "proxy" and message.next_url then
      sleep(wispr_delay(message))
      address = url_resolve(address, message.next_url)
    elseif page.status >= 300 and page.status < 400 and page.headers.location then
      address = url_resolve(address, page.headers.location)
    else
      return { result = "not_wispr", reply = "no WISPr Redirect at " .. address, message = message }
    end
    allow(address)
  end
  if not redirect then return { result = "not_wispr", reply = "no WISPr Redirect within " .. WISPR_HOPS .. " steps" } end
  if (redirect.response_code or 0) ~= 0 then return wispr_outcome(redirect) end
  if not redirect.login_url then return { result = "protocol_error", reply = "the Redirect has no LoginURL", message = redirect } end
  allow(redirect.login_url)
  allow(redirect.abort_login_url)
  store_put(record, WISPR_ABORT_KEY, redirect.abort_login_url, 2)
  local form = wispr_login_form(redirect, options.username, options.password, options.originating_server)
  local reply, _, outcome = wispr_fetch(cmd, { method = "POST", url = redirect.login_url, form = form })
  local polls = 0
  local give_up = type(options.wait) == "number" and now() + options.wait or nil
  -- Pending (201): poll LoginResultsURL after Delay, until `wait` or the deadline ends the wait.
  while not outcome and reply and reply.response_code == 201 and polls < WISPR_POLLS do
    if not reply.login_results_url then return { result = "protocol_error", reply = "pending without a LoginResultsURL", message = reply } end
    local results = url_resolve(redirect.login_url, reply.login_results_url)
    allow(results)
    local delay = max(wispr_delay(reply), 1)
    if give_up and now() + delay > give_up then break end
    sleep(delay)
    polls = polls + 1
    reply, _, outcome = wispr_fetch(cmd, { url = results })
  end
  if outcome then return outcome end
  if not reply then return { result = "protocol_error", reply = "the gateway answered the login without a WISPr message" } end
  if reply.response_code == 201 then return wispr_outcome(reply, "pending") end
  local result = wispr_outcome(reply)
  if reply.response_code == 50 then
    result.result = "success"
    result.logoff_url = reply.logoff_url
    store_put(record, WISPR_LOGOFF_KEY, reply.logoff_url, 2)
    store_put(record, WISPR_ABORT_KEY, nil, 2)
  elseif result.result == "success" then
    result.result = "protocol_error"  -- 150 answers a logoff, not a login
  end
  return result
end

-- Sends the stored URL (LogoffURL or AbortLoginURL) and reads the gateway's answer.
local function wispr_end(cmd, caller, key, expected, missing)
  local record = command_record(cmd, caller)
  local address = cmd.store[key]
  if not address then return { result = missing, reply = "no URL for " .. caller .. " from an earlier wispr.login" } end
  allow_portal(record, address)
  local reply, _, outcome = wispr_fetch(cmd, { url = address })
  if outcome then return outcome end
  store_put(record, key, nil, 2)
  if not reply then return { result = "protocol_error", reply = "the gateway answered without a WISPr message" } end
  local result = wispr_outcome(reply)
  if reply.response_code ~= expected then
    result.result = result.result == "success" and "protocol_error" or result.result
  else
    result.result = expected == 150 and "success" or "aborted"
  end
  return result
end

globals[MODULE.wispr] = readonly({
  parse = wispr_parse,
  login_form = wispr_login_form,
  login = wispr_login,
  logoff = function(cmd) return wispr_end(cmd, "wispr.logoff", WISPR_LOGOFF_KEY, 150, "not_logged_in") end,
  abort = function(cmd) return wispr_end(cmd, "wispr.abort", WISPR_ABORT_KEY, 151, "no_login_pending") end,
}, MODULE.wispr)

-- The generic path through a splash page, for portals no venue script knows (splash.form,
-- splash.follow): what click-through.lua and capport.lua do, as a person with a browser
-- would, a page at a time, over cmd:submit, cmd:http and cmd:probe.
local SPLASH_STEPS = 6
-- Words of a submit button that says no, or leads away from the login ("Read the terms").
local DECLINES = { "decline", "reject", "refuse", "cancel", "disagree", "no thanks", "read", "more info" }
-- Field types only a person fills in.
local PERSONAL = { text = true, email = true, password = true, tel = true, number = true, textarea = true }
-- What a personal field is, from its type or name: the question's label and kind, and the
-- secret that answers it besides one named after the field.
local KINDS = {
  { match = "mail", label = "Email address", kind = "email", secret = "email" },
  { match = "pass", label = "Password", kind = "password", secret = "password" },
  { match = "voucher", label = "Voucher code", secret = "voucher" },
  { match = "code", label = "Access code", secret = "voucher" },
  { match = "room", label = "Room number", secret = "room" },
  { match = "user", label = "User name", secret = "username" },
  { match = "login", label = "User name", secret = "username" },
  { match = "name", label = "Name", secret = "name" },
}

local function splash_kind(field)
  local words = field.type == "email" and "email" or field.type == "password" and "password" or field.name:lower()
  for _, kind in ipairs(KINDS) do
    if find(words, kind.match, 1, true) then return kind end
  end
  return { label = (gsub(field.name, "[_%-]", " ")), secret = field.name }
end

local function declines(field)
  local words = lower((field.name or "") .. " " .. (field.value or "") .. " " .. (field.label or ""))
  for _, word in ipairs(DECLINES) do
    if find(words, "%f[%a]" .. word .. "%f[%A]") then return true end
  end
  return false
end

-- The fields of `form` only a person fills in: enabled, named, and empty.
local function personal_fields(form)
  local fields = {}
  for _, field in ipairs(form.fields) do
    if PERSONAL[field.type] and field.name and not field.disabled and field.value == "" then fields[#fields + 1] = field end
  end
  return fields
end

-- The form of a page to go on with, and the button to click: the first form with a submit
-- button that does not decline, or with no button but fields to fill in (sent as when the
-- person presses Enter).
local function splash_form(page)
  for _, form in ipairs(html_forms(page.body, page.url)) do
    local buttons = 0
    for _, field in ipairs(form.fields) do
      if (field.type == "submit" or field.type == "image") and not field.disabled then
        buttons = buttons + 1
        if not declines(field) then return form, field end
      end
    end
    if buttons == 0 and #personal_fields(form) > 0 then return form, false end
  end
end

-- What `form` needs of a person, from `answers` or the network's secrets: the values, or
-- the questions to ask for those missing. Every box is ticked.
local function splash_fill(cmd, form, answers)
  local values, questions = {}, nil
  for _, field in ipairs(form.fields) do
    if field.type == "checkbox" and field.name and not field.disabled then values[field.name] = true end
  end
  for _, field in ipairs(personal_fields(form)) do
    local kind = splash_kind(field)
    local found, secret = pcall(cmd.secret, cmd, field.name)
    if not found then found, secret = pcall(cmd.secret, cmd, kind.secret) end
    local value = answers[field.name] or (found and secret or nil)
    if value then
      values[field.name] = value
    else
      questions = questions or {}
      questions[#questions + 1] = { name = field.name, label = kind.label, kind = kind.kind }
    end
  end
  return values, questions
end

-- Where a page with no form leads: its refresh, or its one link.
local function splash_onward(page)
  local refresh = html_meta_refresh(page.body, page.url)
  if refresh and refresh.url then return refresh.url, refresh.delay end
  local links = html_links(page.body, page.url)
  if #links == 1 and find(links[1].url, "^https?://") then return links[1].url, 0 end
end

local function splash_follow(cmd, page, answers)
  if type(page) ~= "table" or type(page.body) ~= "string" or type(page.url) ~= "string" then
    error("splash.follow expects a response of cmd:http as its page", 2)
  end
  -- With the person's answers (present_ui) there is no one left to ask.
  local may_ask = answers == nil
  answers = answers or {}
  for step = 1, SPLASH_STEPS do
    local form, button = splash_form(page)
    local answer, problem
    if form then
      local values, questions = splash_fill(cmd, form, answers)
      if questions and not may_ask then
        return "temporary_failure", "the portal at " .. page.url .. " asks for more than the person answered"
      elseif questions then
        return "ui_required", {
          title = "Wi-Fi login",
          message = "The portal at " .. (url_parse(page.url).host or page.url) .. " asks for this before it lets the device in.",
          fields = questions,
        }
      end
      answer, problem = cmd:submit(form, { values = values, button = button })
    else
      local onward, delay = splash_onward(page)
      if not onward then
        return "failure", "still captive at step " .. step .. ": " .. page.url .. " has no form, refresh or lone link to go on with"
      end
      if delay > 0 then sleep(min(delay, 5)) end
      answer, problem = cmd:http{ url = onward }
    end
    if not answer then return "temporary_failure", "the portal did not answer step " .. step .. ": " .. problem end
    if cmd:probe().state == "connected" then return "success" end
    page = answer
  end
  return "failure", "still captive after " .. SPLASH_STEPS .. " steps through the portal (the last page " .. page.url .. ", status " .. page.status .. ")"
end

globals.splash = readonly({ form = splash_form, follow = splash_follow }, "splash")

local function network_answer(network, record)
  local passwords, confidences = record.passwords, record.confidences
  return {
    [CLAIM.ssid] = network[NETWORK_KEY.ssid], [CLAIM.bssid] = network[NETWORK_KEY.bssid],
    [CLAIM.password] = passwords and passwords[network], [CLAIM.confidence] = confidences and confidences[network],
  }
end

local socket_opener, create_response

-- What `cmd` offers besides its fields: create_response, shared; the rest made on first
-- use (see lazy_methods).
local COMMAND = lazy_methods({
  -- Both cmd:http{...} and cmd.http{...} work.
  http = function(cmd, record)
    return function(self, options)
      if options == nil and self ~= cmd then options = self end
      if type(options) ~= "table" then
        error("cmd:http expects a table of options, such as { url = \"https://portal.example/login\" }", 2)
      end
      local ok, response, message = pcall(http_request, io_context(record), options)
      if not ok then error(response, 2) end
      if response then keep_page(record, response) end
      return response, message
    end
  end,
  -- cmd:submit(form, options): the form as a browser submits it (html.submission), sent.
  submit = function(cmd, record)
    return function(self, form, options)
      if self ~= cmd then form, options = self, form end
      if type(form) ~= "table" or type(form.fields) ~= "table" then
        error("cmd:submit expects a form from html.forms, as in cmd:submit(form, { values = { ... } })", 2)
      end
      if options ~= nil and type(options) ~= "table" then error("cmd:submit expects a table of options", 2) end
      local ok, request = pcall(html_submission, form, options)
      if not ok then error(request, 2) end
      if options then
        for _, key in ipairs(SUBMIT_OPTIONS) do request[key] = options[key] end
      end
      allow_form_target(record, form)
      return cmd:http(request)
    end
  end,
  probe = function(_, record)
    return function()
      local verdict = http_probe(io_context(record))
      if verdict.state == "captive" then allow_portal(record, verdict.portal_url) end
      return verdict
    end
  end,
  -- cmd:tcp(host, port, options) and cmd:udp(host, port, options); the dot forms work too.
  tcp = function(cmd, record) return socket_opener(cmd, record, socket_tcp) end,
  udp = function(cmd, record) return socket_opener(cmd, record, socket_udp) end,
  secret = function(cmd, record)
    return function(self, name)
      if name == nil and self ~= cmd then name = self end
      if type(name) ~= "string" then error("cmd:secret expects the secret's name", 2) end
      local value = (record.context[SECRETS] or {})[name]
      if value == nil then
        error("no secret '" .. name .. "' in this helper's section of the secrets file", 2)
      end
      return value
    end
  end,
  store = function(_, record)
    local proxy = setmetatable({}, STORE)
    store_records[proxy] = record
    return proxy
  end,
}, commands, { create_response = function(cmd, result) return create_response(cmd, result) end }, "cmd")

function socket_opener(cmd, record, open)
  return function(self, host_name, port, options)
    if self ~= cmd then host_name, port, options = self, host_name, port end
    local ok, socket, message = pcall(open, io_context(record), host_name, port, options)
    if not ok then error(socket, 2) end
    return socket, message
  end
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

-- Reached from cmd's shared method by a tail call, so level 2 is the script's line.
function create_response(cmd, result)
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
    context = context, session = command[COMMAND_KEY.session], store_data = own[HELPER_KEY.store] or {}, confidences = nil,
    delivered = nil,
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
  }
end

return { [ENTRY.dispatch] = dispatch, [ENTRY.describe] = describe }
