-- Any network with an RFC 8908 Captive Portal API (its URI from DHCP option 114 or
-- `--capport-url`). It claims the network with `low` confidence while the API says
-- `captive`, opens the API's `user-portal-url` and follows the portal from there as
-- click-through.lua does (splash.follow: each page's form as a browser submits it, the
-- person's questions when a page asks for what only they know), and checks with the API that
-- the network is open. In `maintain`, which the runtime sends before the session runs out,
-- it goes through the portal again when the API says the session can be extended
-- (`can-extend-session`).

-- Follows the user portal from its first page; a result, and the questions or a message.
local function through_portal(cmd, portal_url, answers)
  local page, problem = cmd:http{ url = portal_url }
  if not page then return "temporary_failure", "the user portal did not answer: " .. problem end
  return splash.follow(cmd, page, answers)
end

local function log_in(cmd, answers)
  local api, problem = capport.fetch(cmd)
  if not api then
    log.warn(problem or "the network has no Captive Portal API")
    return problem and "temporary_failure" or "unsupported_network"
  end
  if not api.captive then return "success" end
  if not api.user_portal_url then return "unsupported_network" end
  local result, detail = through_portal(cmd, api.user_portal_url, answers)
  if type(detail) == "string" then log.warn(detail) end
  if result ~= "success" then return result, detail end
  local after = capport.fetch(cmd)
  if after and not after.captive then return "success" end
  log.error("the Captive Portal API still says captive after the portal let the device in")
  return "failure"
end

return {
  name = "Captive API",
  hosts = { "@portal" },  -- only what the network names as its portal, and where its pages' forms go

  evaluate = function(cmd)
    local api = capport.fetch(cmd)
    return (api and api.captive and api.user_portal_url) and "low" or "none"
  end,

  authenticate = function(cmd)
    return log_in(cmd)
  end,

  present_ui = function(cmd)
    return log_in(cmd, cmd.answers)
  end,

  maintain = function(cmd)
    local api = capport.fetch(cmd)
    if not api then return cmd:probe().state == "connected" and "success" or "authentication_required" end
    if api.captive then return "authentication_required" end
    if api.can_extend_session and api.user_portal_url then
      local result, detail = through_portal(cmd, api.user_portal_url, {})
      if result ~= "success" then log.warn("the session was not extended: " .. tostring(type(detail) == "string" and detail or result)) end
    end
    return "success"
  end,
}
