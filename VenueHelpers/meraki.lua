-- Cisco Meraki's click-through splash. Meraki sends a captive device to the splash page
-- with `base_grant_url` and `user_continue_url` in the query; the page's button only runs a
-- script, which opens `base_grant_url?continue_url=...`. This helper opens that URL itself,
-- as the script would: nothing to ask, nothing secret. The grant must be on a host the
-- network named (`@portal`: the splash page's, as on Meraki's own hosted splash pages).

-- The grant URL from the probe's redirect; nil when the portal is not Meraki's, or "connected".
local function grant_url(cmd)
  local verdict = cmd:probe()
  if verdict.state == "connected" then return nil, "connected" end
  if not verdict.portal_url then return nil end
  local query = {}
  for pair in (url.parse(verdict.portal_url).query or ""):gmatch("[^&]+") do
    local name, value = pair:match("^([^=]*)=?(.*)$")
    query[url.decode(name)] = url.decode((value:gsub("%+", " ")))
  end
  local base, continue = query.base_grant_url, query.user_continue_url
  if not base or not continue or not base:find("^https?://") then return nil end
  return base .. "?" .. url.query({ { "continue_url", continue } })
end

return {
  name = "Meraki",
  hosts = { "@portal" },  -- only the splash host the probe was sent to

  evaluate = function(cmd)
    return grant_url(cmd) and "low" or "none"
  end,

  authenticate = function(cmd)
    local grant, problem = grant_url(cmd)
    if problem == "connected" then return "success" end
    if not grant then return "unsupported_network" end
    -- The grant answers 302 to continue_url, the page the device first asked for: not needed.
    local answer, why = cmd:http{ url = grant, follow_redirects = false }
    if not answer then
      log.warn("the grant was not answered: " .. why)
      return "temporary_failure"
    end
    if cmd:probe().state == "connected" then return "success" end
    log.warn("still captive after the grant (status " .. answer.status .. ")")
    return "failure"
  end,

  maintain = function(cmd)
    return cmd:probe().state == "connected" and "success" or "authentication_required"
  end,
}
