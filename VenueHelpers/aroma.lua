-- Aroma Café: a terms page with one checkbox to tick (the simulator's `click-through`).
-- The portal answers the connectivity probe with a redirect to its login page; the
-- script reads that page's form, ticks the box and submits it.

local SSID = "Aroma-Guest"

-- Every field of the page's first form, with its checkboxes ticked.
local function filled(form)
  local fields = {}
  for _, field in ipairs(form.fields) do
    if field.name then fields[field.name] = field.value end
  end
  return fields
end

return {
  name = "Aroma Wi-Fi",
  hosts = { "portal.aroma.example" },

  filter_scan_list = function(cmd)
    local ours = {}
    for _, network in ipairs(cmd.network_list) do
      if network.ssid == SSID then
        network:set_confidence("high")
        ours[#ours + 1] = network
      end
    end
    local response = cmd:create_response("success")
    response:set_network_list(ours)
    response:deliver()
  end,

  evaluate = function(cmd)
    return cmd.network.ssid == SSID and "high" or "none"
  end,

  authenticate = function(cmd)
    local verdict = cmd:probe()
    if verdict.state == "connected" then return "success" end
    if not verdict.portal_url then
      log.warn("no portal found: " .. table.concat(verdict.details, "; "))
      return "temporary_failure"
    end
    local page, problem = cmd:http{ url = verdict.portal_url }
    if not page then
      log.warn("the login page did not load: " .. problem)
      return "temporary_failure"
    end
    local form = html.forms(page.body, page.url)[1]
    if not form then
      log.error("no form on " .. page.url)
      return "failure"
    end
    local answer, failed = cmd:http{ method = form.method, url = form.action, form = filled(form) }
    if not answer or answer.status ~= 200 then
      log.warn("the portal refused the terms: " .. (failed or answer.status))
      return "temporary_failure"
    end
    cmd.store.logout_url = url.resolve(page.url, "/logout")
    return cmd:probe().state == "connected" and "success" or "failure"
  end,

  -- Still online? Otherwise the runtime authenticates again.
  maintain = function(cmd)
    return cmd:probe().state == "connected" and "success" or "authentication_required"
  end,

  logoff = function(cmd)
    if cmd.store.logout_url then cmd:http{ url = cmd.store.logout_url } end
    cmd.store.logout_url = nil
    return "success"
  end,
}
