-- Any network with an RFC 8908 Captive Portal API (its URI from DHCP option 114 or
-- `--capport-url`) whose portal is a terms-of-use page. It claims the network with `low`
-- confidence while the API says `captive`, accepts the terms at the API's
-- `user-portal-url`, and checks with the API that the network is open. In `maintain`,
-- which the runtime sends before the session runs out, it accepts the terms again when the
-- API says the session can be extended (`can-extend-session`).

-- The portal's terms form: the first form without a password field.
local function terms_form(page)
  for _, form in ipairs(html.forms(page.body, page.url)) do
    local asks_password = false
    for _, field in ipairs(form.fields) do
      if field.type == "password" then asks_password = true end
    end
    if not asks_password then return form end
  end
end

-- Loads the user portal and submits its terms form with every box ticked.
local function accept_terms(cmd, portal_url)
  local page, problem = cmd:http{ url = portal_url }
  if not page then return false, "the user portal did not answer: " .. problem end
  local form = terms_form(page)
  if not form then return false, "no terms form at " .. page.url end
  local fields = {}
  for _, field in ipairs(form.fields) do
    if field.name and field.type ~= "radio" then fields[field.name] = field.value end
  end
  local answer, failed = cmd:http{ method = "POST", url = form.action, form = fields }
  if not answer then return false, "the terms were not sent: " .. failed end
  return true
end

return {
  name = "Captive API",
  hosts = { "@portal" },  -- only what the network names as its portal

  evaluate = function(cmd)
    local api = capport.fetch(cmd)
    return (api and api.captive and api.user_portal_url) and "low" or "none"
  end,

  authenticate = function(cmd)
    local api, problem = capport.fetch(cmd)
    if not api then
      log.warn(problem or "the network has no Captive Portal API")
      return problem and "temporary_failure" or "unsupported_network"
    end
    if not api.captive then return "success" end
    if not api.user_portal_url then return "unsupported_network" end
    local sent, why = accept_terms(cmd, api.user_portal_url)
    if not sent then
      log.warn(why)
      return "temporary_failure"
    end
    local after = capport.fetch(cmd)
    if after and not after.captive then return "success" end
    log.error("the Captive Portal API still says captive after accepting the terms")
    return "failure"
  end,

  maintain = function(cmd)
    local api = capport.fetch(cmd)
    if not api then return cmd:probe().state == "connected" and "success" or "authentication_required" end
    if api.captive then return "authentication_required" end
    if api.can_extend_session and api.user_portal_url then
      local extended, why = accept_terms(cmd, api.user_portal_url)
      if not extended then log.warn("the session was not extended: " .. why) end
    end
    return "success"
  end,
}
