-- The WISPr smart client (after methods.lua, see contract.lua): wispr.login, wispr.logoff,
-- wispr.abort on top of cmd:http and wispr.parse. Waits (Delay) count against the command's
-- deadline.
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
