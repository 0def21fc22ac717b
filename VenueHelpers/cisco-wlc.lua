-- Cisco Wireless LAN Controller web authentication (and web passthrough). The WLC's
-- login.html posts to /login.html with hidden `buttonClicked`, `err_flag`, `redirect_url`
-- and friends, and `username` and `password`; its button is not a submit button but runs
-- submitAction(), which sets `buttonClicked` to 4 and `redirect_url` to what follows
-- `redirect=` in the page's address, and only then submits. Sent as the page has it
-- (`buttonClicked=0`) the form logs nobody in, so the generic path cannot: this helper does
-- what submitAction() does. Web passthrough's page has no credentials, only Accept. The
-- username and password come from the secrets file's [cisco-wlc] section, else the person.
-- logoff posts `userStatus=1` to /logout.html, as the WLC's logout window does.

-- The page's web-auth form and whether it asks for credentials; nil for another portal.
local function login_form(page)
  for _, form in ipairs(html.forms(page.body, page.url)) do
    local names = {}
    for _, field in ipairs(form.fields) do
      if field.name then names[field.name] = true end
    end
    if names.buttonClicked and names.redirect_url and names.err_flag then
      return form, names.username and names.password
    end
  end
end

-- The portal's page when the network is captive; nil and "connected" when it is not.
local function portal(cmd)
  local verdict = cmd:probe()
  if verdict.state == "connected" then return nil, "connected" end
  if not verdict.portal_url then return nil end
  return cmd:http{ url = verdict.portal_url }
end

local function log_in(cmd, answers)
  local page, problem = portal(cmd)
  if problem == "connected" then return "success" end
  if not page then return "temporary_failure" end
  local form, asks = login_form(page)
  if not form then return "unsupported_network" end
  local redirect = page.url:match("[?&]redirect=(.*)$") or ""
  local values = { buttonClicked = "4", err_flag = "0", redirect_url = redirect:sub(1, 255) }
  if asks then
    local given = family.credentials(cmd, answers)
    if not given then
      if answers then return "failure" end
      return "ui_required"
    end
    values.username, values.password = given.username, given.password
  end
  local answer, why = cmd:submit(form, { values = values, button = false })
  if not answer then
    log.warn("the controller did not answer the login: " .. why)
    return "temporary_failure"
  end
  if cmd:probe().state == "connected" then
    cmd.store.logout_url = url.resolve(page.url, "/logout.html")
    return "success"
  end
  log.warn("the controller refused the login: " .. html.text(answer.body):sub(1, 200))
  if answers or not asks then return "failure" end
  return "ui_required"
end

return {
  name = "Cisco WLC",
  hosts = { "@portal" },  -- only the controller's page the probe was sent to
  ui = family.login_questions("This network asks for a username and password."),

  evaluate = function(cmd)
    local page = portal(cmd)
    return (page and login_form(page)) and "low" or "none"
  end,

  authenticate = function(cmd)
    return log_in(cmd)
  end,

  present_ui = function(cmd)
    return log_in(cmd, cmd.answers)
  end,

  maintain = function(cmd)
    return cmd:probe().state == "connected" and "success" or "authentication_required"
  end,

  logoff = function(cmd)
    local logout = cmd.store.logout_url
    if not logout then return "success" end
    local answer, why = cmd:http{ url = logout, form = { userStatus = "1" } }
    if not answer then
      log.warn("the controller did not answer the logout: " .. why)
      return "failure"
    end
    cmd.store.logout_url = nil
    return "success"
  end,
}
