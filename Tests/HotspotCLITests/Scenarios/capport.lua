-- Park Wi-Fi: a terms page behind an RFC 8908 Captive Portal API (the simulator's
-- `capport`). The network announces the API (DHCP option 114); capport.fetch asks it
-- whether the device is captive, where people log in (user_portal_url) and, once logged in,
-- how long the session has left (seconds_remaining) and whether logging in again extends it
-- (can_extend_session). The runtime reads the API too and sends maintain shortly before the
-- session runs out (at most 60 s before): that maintain logs in again to extend it.

local SSID = "Park-WiFi"
local EXTEND_BELOW = 60  -- seconds remaining: the runtime's early maintain comes within this

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
  hosts = { "*.park.example" },  -- the API and the user portal are both under park.example

  evaluate = function(cmd)
    return cmd.network.ssid == SSID and "high" or "none"
  end,

  authenticate = function(cmd)
    local api, problem = capport.fetch(cmd)
    if not api then
      log.warn(problem or "the network announces no Captive Portal API")
      return "temporary_failure"
    end
    if api.captive then
      if not api.user_portal_url then return "unsupported_network" end
      local ok, failed = accept_terms(cmd, api.user_portal_url)
      if not ok then
        log.warn("the login failed: " .. failed)
        return "temporary_failure"
      end
      api, problem = capport.fetch(cmd)
      if not api or api.captive then
        log.error("still captive after the login: " .. (problem or "the API says captive"))
        return "failure"
      end
    end
    log.info(("logged in; %s s remaining"):format(tostring(api.seconds_remaining)))
    cmd.store.logout_url = url.resolve(api.user_portal_url or api.api_url, "/logout")
    return "success"
  end,

  maintain = function(cmd)
    local api, problem = capport.fetch(cmd)
    if not api then
      log.warn("the Captive Portal API did not answer: " .. tostring(problem))
      return cmd:probe().state == "connected" and "success" or "authentication_required"
    end
    if api.captive then return "authentication_required" end
    local remaining = api.seconds_remaining
    if remaining and remaining < EXTEND_BELOW and api.can_extend_session and api.user_portal_url then
      log.info(("%d s remaining: extending the session"):format(remaining))
      local ok, failed = accept_terms(cmd, api.user_portal_url)
      if not ok then
        log.warn("the extension failed: " .. failed)
        return "authentication_required"
      end
      local extended = capport.fetch(cmd)
      if extended and extended.seconds_remaining then
        log.info(("extended: %d s remaining"):format(extended.seconds_remaining))
      end
    end
    return "success"
  end,

  logoff = function(cmd)
    if cmd.store.logout_url then cmd:http{ url = cmd.store.logout_url } end
    cmd.store.logout_url = nil
    return "success"
  end,
}
