-- Central Station: the probe is sent on to an authorisation host, which hands out a
-- ticket and sends the device to a login host (the simulator's `redirect-chain`):
--
--   probe -> auth.station.example/start -> /authorize -> login.station.example/login?ticket=T
--   POST /login (ticket) -> 303 /welcome
--
-- Every hop stays under station.example, so one wildcard in `hosts` covers the chain; a hop
-- anywhere else is refused before anything is sent to it. cmd:http follows the redirects,
-- resolving relative Locations, and turns the 303 after the POST into a GET.

local SSID = "Station-WiFi"

local function log_hops(what, response)
  for _, hop in ipairs(response.redirects) do
    log.info(("%s: %d to %s"):format(what, hop.status, hop.url))
  end
end

return {
  name = "Station Wi-Fi",
  hosts = { "*.station.example" },

  evaluate = function(cmd)
    return cmd.network.ssid == SSID and "high" or "none"
  end,

  authenticate = function(cmd)
    local verdict = cmd:probe()
    if verdict.state == "connected" then return "success" end
    if not verdict.portal_url then return "temporary_failure" end
    log.info("the probe was sent to " .. verdict.portal_url)
    -- The ticket is in the URL the chain ends at, and again in the form's hidden field.
    local page, problem = cmd:http{ url = verdict.portal_url }
    if not page then
      log.warn("the chain to the login page broke: " .. problem)
      return "temporary_failure"
    end
    log_hops("login page", page)
    if page.status ~= 200 then
      log.warn(("the login page answered %d at %s"):format(page.status, page.url))
      return "temporary_failure"
    end
    local form = html.forms(page.body, page.url)[1]
    if not form then
      log.error("no form on " .. page.url)
      return "failure"
    end
    local fields = {}
    for _, field in ipairs(form.fields) do
      if field.name then fields[field.name] = field.value end
    end
    if not fields.ticket then
      log.error("the login form carries no ticket")
      return "failure"
    end
    local answer, failed = cmd:http{ method = form.method, url = form.action, form = fields }
    if not answer or answer.status ~= 200 then
      log.warn("the login failed: " .. (failed or answer.status))
      return "temporary_failure"
    end
    log_hops("login", answer)
    cmd.store.logout_url = url.resolve(answer.url, "/logout")
    return cmd:probe().state == "connected" and "success" or "failure"
  end,

  maintain = function(cmd)
    return cmd:probe().state == "connected" and "success" or "authentication_required"
  end,

  logoff = function(cmd)
    if cmd.store.logout_url then cmd:http{ url = cmd.store.logout_url } end
    cmd.store.logout_url = nil
    return "success"
  end,
}
