-- Campus Wi-Fi: a WPA network whose password this script supplies from the scan list,
-- then a username and password form with a hidden CSRF field and a session cookie (the
-- simulator's `credentials`). Credentials come from the secrets file:
--
--   [campus]
--   wifi_password = ...
--   username = ...
--   password = ...

local SSID = "Campus-WiFi"

return {
  name = "Campus Wi-Fi",
  hosts = { "login.campus.example" },

  filter_scan_list = function(cmd)
    local ours = {}
    for _, network in ipairs(cmd.network_list) do
      if network.ssid == SSID then
        network:set_confidence("high")
        network:set_password(cmd:secret("wifi_password"))
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
    if not verdict.portal_url then return "temporary_failure" end
    -- The login page sets the session cookie that the POST must carry back: the cookie
    -- jar of this network session keeps it.
    local page, problem = cmd:http{ url = verdict.portal_url }
    if not page then
      log.warn("the login page did not load: " .. problem)
      return "temporary_failure"
    end
    local form = html.forms(page.body, page.url)[1]
    if not form then return "failure" end
    -- The page's own fields (its CSRF token) go as they are; the credentials fill in the rest.
    local answer, failed = cmd:submit(form, {
      values = { username = cmd:secret("username"), password = cmd:secret("password") },
    })
    if not answer then
      log.warn("login failed: " .. failed)
      return "temporary_failure"
    end
    if answer.status == 401 then
      log.error("the portal refused the credentials")
      return "failure"
    end
    cmd.store.logout_url = url.resolve(page.url, "/logout")
    return cmd:probe().state == "connected" and "success" or "failure"
  end,

  maintain = function(cmd)
    return cmd:probe().state == "connected" and "success" or "authentication_required"
  end,

  logoff = function(cmd)
    if cmd.store.logout_url then cmd:http{ method = "POST", url = cmd.store.logout_url } end
    cmd.store.logout_url = nil
    return "success"
  end,
}
