-- OPNsense's captive portal. Its page's login form is never submitted: the page's script
-- posts `user` and `password` to the access API (/api/captiveportal/access/logon) and reads
-- the JSON answer, so the generic path cannot log in there. This helper uses the same API:
-- `status` says whether the zone asks for credentials (`authType`), `logon` takes the
-- username and password of the secrets file's [opnsense] section, else the person's (none
-- for a zone without authentication), `logoff` disconnects.

local API = "/api/captiveportal/access/"

-- The portal's API base when the captive probe leads to an OPNsense page; nil and
-- "connected" when the network is open.
local function portal(cmd)
  local verdict = cmd:probe()
  if verdict.state == "connected" then return nil, "connected" end
  if not verdict.portal_url then return nil end
  local page = cmd:http{ url = verdict.portal_url }
  if not page or not page.body:find(API, 1, true) then return nil end
  return url.resolve(page.url, API)
end

-- What an API call answers, or nil and why not.
local function call(cmd, address, form)
  local reply, problem = cmd:http{ url = address, method = "POST", form = form or {} }
  if not reply then return nil, problem end
  local ok, session = pcall(json.decode, reply.body)
  if not ok or type(session) ~= "table" then return nil, "the portal's answer is not JSON: " .. reply.url end
  return session
end

local function log_in(cmd, answers)
  local api, problem = portal(cmd)
  if problem == "connected" then return "success" end
  if not api then return "unsupported_network" end
  local status, why = call(cmd, api .. "status")
  if not status then
    log.warn(why)
    return "temporary_failure"
  end
  local form = {}
  if status.authType ~= "none" then
    local given = family.credentials(cmd, answers)
    if not given then return "ui_required" end
    local username, password = given.username, given.password
    form = { { "user", username }, { "password", password } }
  end
  local session
  session, why = call(cmd, api .. "logon", form)
  if not session then
    log.warn(why)
    return "temporary_failure"
  end
  if session.clientState ~= "AUTHORIZED" then
    log.warn("the portal refused the login: clientState " .. tostring(session.clientState))
    if answers or status.authType == "none" then return "failure" end
    return "ui_required"
  end
  cmd.store.api = api
  if cmd:probe().state == "connected" then return "success" end
  log.warn("the portal says authorized, but the probe is still captive")
  return "temporary_failure"
end

return {
  name = "OPNsense",
  hosts = { "@portal" },  -- only the portal the probe was sent to
  ui = family.login_questions("This network's portal asks for a username and password."),

  evaluate = function(cmd)
    return portal(cmd) and "low" or "none"
  end,

  authenticate = function(cmd)
    return log_in(cmd)
  end,

  present_ui = function(cmd)
    return log_in(cmd, cmd.answers)
  end,

  maintain = function(cmd)
    local session = cmd.store.api and call(cmd, cmd.store.api .. "status")
    if session then return session.clientState == "AUTHORIZED" and "success" or "authentication_required" end
    return cmd:probe().state == "connected" and "success" or "authentication_required"
  end,

  logoff = function(cmd)
    if not cmd.store.api then return "success" end
    local session, why = call(cmd, cmd.store.api .. "logoff")
    if not session then
      log.warn(why)
      return "failure"
    end
    cmd.store.api = nil
    return "success"
  end,
}
