-- CoovaChilli (and ChilliSpot before it), the access controller of many hotspots. It sends a
-- captive device to a login page with `res=notyet`, `challenge`, `uamip` and `uamport` in the
-- query; its own pages build their login form in JavaScript (ChilliLibrary.js), so the
-- generic path finds no form there. This helper speaks the JSON interface those pages use
-- (http://uamip:uamport/json/status, /json/logon, /json/logoff): a CHAP logon with the
-- username and password from the secrets file's [coovachilli] section, else asked of the
-- person. The gateway must be the host the probe was sent to (`@portal`).

-- The gateway's JSON interface from the probe's redirect: nil when the portal is not a
-- CoovaChilli one, or "connected".
local function gateway(cmd)
  local verdict = cmd:probe()
  if verdict.state == "connected" then return nil, "connected" end
  if not verdict.portal_url then return nil end
  local query = family.query(verdict.portal_url)
  if query.res ~= "notyet" or not query.challenge or not query.uamip or not (query.uamport or ""):match("^%d+$") then return nil end
  return { root = "http://" .. query.uamip .. ":" .. query.uamport .. "/json/", userurl = query.userurl }
end

-- What the gateway's JSON interface says, or nil and why not.
local function ask(cmd, address)
  local reply, problem = cmd:http{ url = address }
  if not reply then return nil, problem end
  local ok, status = pcall(json.decode, reply.body)
  if not ok or type(status) ~= "table" then return nil, "the gateway's answer is not JSON: " .. reply.url end
  return status
end

local function bytes(hex)
  return (hex:gsub("%x%x", function(pair) return string.char(tonumber(pair, 16)) end))
end

local function log_in(cmd, answers)
  local chilli, problem = gateway(cmd)
  if problem == "connected" then return "success" end
  if not chilli then return "unsupported_network" end
  local given = family.credentials(cmd, answers)
  if not given then return "ui_required" end
  local username, password = given.username, given.password
  local status, why = ask(cmd, chilli.root .. "status")
  if not status then
    log.warn(why)
    return "temporary_failure"
  end
  if status.clientState ~= 1 then
    if type(status.challenge) ~= "string" then
      log.warn("the gateway's status has no challenge")
      return "temporary_failure"
    end
    -- CHAP as ChilliLibrary.js computes it: MD5 of the ident (0x00), the password and the challenge's bytes.
    local fields = { { "username", username }, { "response", crypto.md5("\0" .. password .. bytes(status.challenge)) } }
    if chilli.userurl then fields[#fields + 1] = { "userurl", chilli.userurl } end
    status, why = ask(cmd, chilli.root .. "logon?" .. url.query(fields))
    if not status then
      log.warn(why)
      return "temporary_failure"
    end
  end
  if status.clientState ~= 1 then
    log.warn("the gateway refused the login: " .. tostring(status.message or "clientState " .. tostring(status.clientState)))
    if answers then return "failure" end
    return "ui_required"
  end
  cmd.store.json_root = chilli.root
  if cmd:probe().state == "connected" then return "success" end
  log.warn("the gateway says logged in, but the probe is still captive")
  return "temporary_failure"
end

return {
  name = "CoovaChilli",
  hosts = { "@portal" },  -- only the gateway the probe was sent to
  ui = family.login_questions("This hotspot asks for a username and password."),

  evaluate = function(cmd)
    return gateway(cmd) and "low" or "none"
  end,

  authenticate = function(cmd)
    return log_in(cmd)
  end,

  present_ui = function(cmd)
    return log_in(cmd, cmd.answers)
  end,

  maintain = function(cmd)
    local status = cmd.store.json_root and ask(cmd, cmd.store.json_root .. "status")
    if status then return status.clientState == 1 and "success" or "authentication_required" end
    return cmd:probe().state == "connected" and "success" or "authentication_required"
  end,

  logoff = function(cmd)
    if not cmd.store.json_root then return "success" end
    local status, why = ask(cmd, cmd.store.json_root .. "logoff")
    if not status then
      log.warn(why)
      return "failure"
    end
    cmd.store.json_root = nil
    return status.clientState == 0 and "success" or "failure"
  end,
}
