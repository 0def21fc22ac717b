-- Park Wi-Fi: a portal with the RFC 8908 Captive Portal API (the simulator's `capport`).
-- The API says whether the device is captive, where people log in (user-portal-url) and,
-- once logged in, how long the session has left (seconds-remaining) and whether logging in
-- again extends it (can-extend-session). The venue serves it at /capport-api on its portal
-- host (the URL DHCP option 114 would announce).
--
-- maintain runs every 300 s: a session with less left than that would run out before the
-- next one, so maintain extends it now.

local SSID = "Park-WiFi"
local API_PATH = "/capport-api"
local EXTEND_BELOW = 300  -- seconds remaining; the interval between two maintain commands

-- The API's answer as a table, or nil and what went wrong.
local function read_api(cmd, api_url)
  local answer, problem = cmd:http{ url = api_url, headers = { Accept = "application/captive+json" },
                                    max_body = 64 * 1024, follow_redirects = false }
  if not answer then return nil, problem end
  local content_type = (answer.headers["content-type"] or ""):lower()
  if answer.status ~= 200 or not content_type:find("application/captive+json", 1, true) then
    return nil, ("the API answered %d (%s)"):format(answer.status, content_type)
  end
  local ok, status = pcall(json.decode, answer.body)
  if not ok or type(status) ~= "table" or type(status.captive) ~= "boolean" then
    return nil, "the API's JSON has no captive field"
  end
  return status
end

-- Ticks the terms at the user portal and posts them.
local function accept_terms(cmd, portal_url)
  local page, problem = cmd:http{ url = portal_url }
  if not page then return false, problem end
  local form = html.forms(page.body, page.url)[1]
  if not form then return false, "no form on " .. page.url end
  local fields = {}
  for _, field in ipairs(form.fields) do
    if field.name then fields[field.name] = field.value end
  end
  local answer, failed = cmd:http{ method = form.method, url = form.action, form = fields }
  if not answer then return false, failed end
  if answer.status ~= 200 then return false, "the portal answered " .. answer.status end
  return true
end

return {
  name = "Park Wi-Fi",
  hosts = { "portal.park.example" },

  evaluate = function(cmd)
    return cmd.network.ssid == SSID and "high" or "none"
  end,

  authenticate = function(cmd)
    local verdict = cmd:probe()
    if verdict.state == "connected" then return "success" end
    if not verdict.portal_url then return "temporary_failure" end
    local api_url = url.resolve(verdict.portal_url, API_PATH)
    local status, problem = read_api(cmd, api_url)
    if not status then
      log.warn("the Captive Portal API did not answer: " .. problem)
      return "temporary_failure"
    end
    if status.captive then
      local ok, failed = accept_terms(cmd, status["user-portal-url"])
      if not ok then
        log.warn("the login failed: " .. failed)
        return "temporary_failure"
      end
      status, problem = read_api(cmd, api_url)
      if not status or status.captive then
        log.warn("still captive after the login: " .. (problem or "captive is true"))
        return "failure"
      end
    end
    log.info(("logged in; %s s remaining"):format(tostring(status["seconds-remaining"])))
    cmd.store.api_url = api_url
    cmd.store.logout_url = url.resolve(api_url, "/logout")
    return "success"
  end,

  maintain = function(cmd)
    if not cmd.store.api_url then
      return cmd:probe().state == "connected" and "success" or "authentication_required"
    end
    local status, problem = read_api(cmd, cmd.store.api_url)
    if not status then
      log.warn("the Captive Portal API did not answer: " .. problem)
      return cmd:probe().state == "connected" and "success" or "authentication_required"
    end
    if status.captive then return "authentication_required" end
    local remaining = status["seconds-remaining"]
    if remaining and remaining < EXTEND_BELOW and status["can-extend-session"] then
      log.info(("%d s remaining: extending the session"):format(remaining))
      local ok, failed = accept_terms(cmd, status["user-portal-url"])
      if not ok then
        log.warn("the extension failed: " .. failed)
        return "authentication_required"
      end
      local extended = read_api(cmd, cmd.store.api_url)
      if extended and extended["seconds-remaining"] then
        log.info(("extended: %d s remaining"):format(extended["seconds-remaining"]))
      end
    end
    return "success"
  end,

  logoff = function(cmd)
    if cmd.store.logout_url then cmd:http{ url = cmd.store.logout_url } end
    cmd.store.logout_url, cmd.store.api_url = nil, nil
    return "success"
  end,
}
