-- The prelude's I/O (after contract.lua, see there): cmd's methods that reach the network or
-- the secrets, cmd.store, capport.fetch, and the portal's hosts a generic helper may follow.

-- The methods of `cmd`'s I/O (cmd:http and the like) are made on first use, each bound
-- to its command, so both the colon and the dot forms work (cmd:http{...} and
-- cmd.http{...}), and a command pays only for those its handler touches.
-- What each command may do (CommandPrivileges.swift): a set of command names each.
local WITHOUT_NETWORK, WITHOUT_SECRETS, SCAN_LIST_SECRETS = {}, {}, {}
for _, name in ipairs(CONTRACT.without_network) do WITHOUT_NETWORK[name] = true end
for _, name in ipairs(CONTRACT.without_secrets) do WITHOUT_SECRETS[name] = true end
for _, name in ipairs(CONTRACT.scan_list_secrets) do SCAN_LIST_SECRETS[name] = true end
local PRIVILEGES = " (docs/SCRIPTING.md, \"What each command may do\")"

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
-- call, so a command that makes none pays nothing. `what` names the function the script
-- called, which a command without a network is refused, at the script's line.
local function io_context(record, what)
  if WITHOUT_NETWORK[record.type] then
    error(what .. " is refused in " .. record.type .. ": it has no network, as it runs before any is joined" .. PRIVILEGES, 3)
  end
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
    local status, problem = http_capport(io_context(record, "capport.fetch"))
    if status then
      allow_portal(record, status.user_portal_url)
      allow_portal(record, status.venue_info_url)
    end
    return status, problem
  end,
}, "capport")

-- Made below COMMAND, which names it.
local socket_opener

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
      local ok, response, message = pcall(http_request, io_context(record, "cmd:http"), options)
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
      local verdict = http_probe(io_context(record, "cmd:probe"))
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
      local command = record.type
      if WITHOUT_SECRETS[command] then
        error("cmd:secret is refused in " .. command .. ": a helper reads its secrets from the command it is chosen in "
          .. "(authenticate) onwards" .. PRIVILEGES, 2)
      elseif WITHOUT_NETWORK[command] and not SCAN_LIST_SECRETS[name] then
        error("cmd:secret('" .. name .. "') is refused in " .. command .. ": it reads only the Wi-Fi passwords it sets"
          .. PRIVILEGES, 2)
      end
      local value = (record.context[SECRETS] or {})[name]
      if value == nil then
        error("no secret '" .. name .. "' in this helper's section of the secrets file", 2)
      end
      return value
    end
  end,
  -- Whether cmd:secret(name) would answer in a command that may read secrets; evaluate is
  -- sent the names alone, so it may judge a network by what it could log in with.
  has_secret = function(cmd, record)
    return function(self, name)
      if name == nil and self ~= cmd then name = self end
      if type(name) ~= "string" then error("cmd:has_secret expects the secret's name", 2) end
      return (record.context[SECRETS] or {})[name] ~= nil
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
    local ok, socket, message = pcall(open, io_context(record, "cmd:tcp and cmd:udp"), host_name, port, options)
    if not ok then error(socket, 2) end
    return socket, message
  end
end
