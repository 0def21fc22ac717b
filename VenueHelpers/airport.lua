-- Airport Free Wi-Fi: a WISPr 1.0 gateway (the simulator's `wispr`). No page scraping:
-- the portal says where to log in (a Redirect message), the script posts the standard
-- WISPr form, and the AuthenticationReply says how it went and where to log off.
-- Credentials come from the secrets file ([airport] username, password).

local SSID = "Airport-Free-WiFi"

local LOGIN_SUCCEEDED, LOGIN_PENDING = 50, 201

return {
  name = "Airport Wi-Fi",
  hosts = { "wifi.airport.example" },

  evaluate = function(cmd)
    return cmd.network.ssid == SSID and "high" or "none"
  end,

  authenticate = function(cmd)
    local verdict = cmd:probe()
    if verdict.state == "connected" then return "success" end
    if not verdict.portal_url then return "temporary_failure" end
    local page, problem = cmd:http{ url = verdict.portal_url }
    if not page then
      log.warn("the portal did not answer: " .. problem)
      return "temporary_failure"
    end
    local redirect, broken = wispr.parse(page.body)
    if not redirect or redirect.message ~= "redirect" then
      log.error("no WISPr Redirect on " .. page.url .. (broken and (": " .. broken) or ""))
      return "failure"
    end
    local form = wispr.login_form(redirect, cmd:secret("username"), cmd:secret("password"))
    local answer, failed = cmd:http{ method = "POST", url = redirect.login_url, form = form }
    if not answer then
      log.warn("login failed: " .. failed)
      return "temporary_failure"
    end
    local reply = wispr.parse(answer.body)
    -- A pending login: poll where the gateway says, after the delay it asks for.
    while reply and reply.response_code == LOGIN_PENDING and reply.login_results_url do
      sleep(reply.delay or 1)
      answer = cmd:http{ url = reply.login_results_url }
      reply = answer and wispr.parse(answer.body)
    end
    if not reply or reply.response_code ~= LOGIN_SUCCEEDED then
      log.error("the gateway refused the login: " .. tostring(reply and reply.reply_message or reply and reply.response_code))
      return "failure"
    end
    cmd.store.logoff_url = reply.logoff_url
    return "success"
  end,

  maintain = function(cmd)
    return cmd:probe().state == "connected" and "success" or "authentication_required"
  end,

  logoff = function(cmd)
    if cmd.store.logoff_url then
      local answer = cmd:http{ url = cmd.store.logoff_url }
      local reply = answer and wispr.parse(answer.body)
      if not reply or reply.response_code ~= 150 then log.warn("the gateway did not confirm the logoff") end
    end
    cmd.store.logoff_url = nil
    return "success"
  end,
}
