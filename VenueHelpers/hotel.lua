-- Grand Hotel: a terms page whose sessions expire after a while (the simulator's
-- `session-expiry`). `maintain` notices the expiry with a probe and logs in again
-- itself, so the guest never sees the portal twice.

local SSID = "Grand-Hotel"

local function accept_terms(cmd)
  local verdict = cmd:probe()
  if verdict.state == "connected" then return true end
  if not verdict.portal_url then return false, "no portal found" end
  local page, problem = cmd:http{ url = verdict.portal_url }
  if not page then return false, problem end
  local form = html.forms(page.body, page.url)[1]
  if not form then return false, "no form on " .. page.url end
  local fields = {}
  for _, field in ipairs(form.fields) do
    if field.name then fields[field.name] = field.value end
  end
  local answer, failed = cmd:http{ method = form.method, url = form.action, form = fields }
  if not answer then return false, failed end
  cmd.store.logout_url = url.resolve(page.url, "/logout")
  return cmd:probe().state == "connected", "still captive after accepting the terms"
end

return {
  name = "Grand Hotel",
  hosts = { "guest.grandhotel.example" },

  evaluate = function(cmd)
    return cmd.network.ssid == SSID and "high" or "none"
  end,

  authenticate = function(cmd)
    local ok, problem = accept_terms(cmd)
    if ok then return "success" end
    log.warn(problem)
    return "temporary_failure"
  end,

  maintain = function(cmd)
    if cmd:probe().state == "connected" then return "success" end
    log.info("the session expired; accepting the terms again")
    local ok, problem = accept_terms(cmd)
    if ok then return "success" end
    log.warn(problem)
    return "authentication_required"
  end,

  logoff = function(cmd)
    if cmd.store.logout_url then cmd:http{ url = cmd.store.logout_url } end
    cmd.store.logout_url = nil
    return "success"
  end,
}
