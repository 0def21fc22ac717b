-- City Library: the portal wants the visitor's email address (the simulator's `email`).
-- Only a person can give it, so `authenticate` answers `ui_required`; `ui` says what to ask
-- them, and `present_ui` submits what they entered (`cmd.answers.email`), which the runtime
-- has checked is an email address.

local SSID = "City-Library"

return {
  name = "City Library",
  hosts = { "wifi.library.example" },
  ui = {
    title = "City Library Wi-Fi",
    message = "The library lets you in with your email address.",
    fields = { { name = "email", label = "Email address", kind = "email" } },
  },

  evaluate = function(cmd)
    return cmd.network.ssid == SSID and "high" or "none"
  end,

  authenticate = function(cmd)
    local verdict = cmd:probe()
    if verdict.state == "connected" then return "success" end
    if not verdict.portal_url then return "temporary_failure" end
    cmd.store.portal_url = verdict.portal_url
    return "ui_required"
  end,

  present_ui = function(cmd)
    local email = cmd.answers.email
    local page, problem = cmd:http{ url = cmd.store.portal_url }
    if not page then
      log.warn(problem)
      return "temporary_failure"
    end
    local form = html.forms(page.body, page.url)[1]
    if not form then return "failure" end
    local answer, failed = cmd:submit(form, { values = { email = email } })
    if not answer or answer.status ~= 200 then
      log.warn("the portal refused the address: " .. (failed or answer.status))
      return "failure"
    end
    cmd.store.logout_url = url.resolve(page.url, "/logout")
    return cmd:probe().state == "connected" and "success" or "failure"
  end,

  maintain = function(cmd)
    return cmd:probe().state == "connected" and "success" or "authentication_required"
  end,

  logoff = function(cmd)
    if cmd.store.logout_url then cmd:http{ url = cmd.store.logout_url } end
    return "success"
  end,
}
