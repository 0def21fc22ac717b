-- Aruba's captive portal (ArubaOS controllers and Aruba Instant): the device is sent to
-- /cgi-bin/login?cmd=login with `mac`, `ip`, `essid`, `apname` and `url`, whose form posts
-- `user`, `password`, the hidden `cmd=authenticate` and `url` with the `Login` button.
-- The username and password come from the secrets file's [aruba] section, else the person.
-- logoff opens /cgi-bin/login?cmd=logout on the same host, as Aruba's logout link does.

-- The login page when the probe is sent to Aruba's, with its form and button; nil for
-- another portal, and "connected" when the network is open.
local function portal(cmd)
  local verdict = cmd:probe()
  if verdict.state == "connected" then return nil, "connected" end
  if not verdict.portal_url then return nil end
  local query = family.query(verdict.portal_url)
  if (url.parse(verdict.portal_url).path or "") ~= "/cgi-bin/login" or query.cmd ~= "login" or not query.mac then return nil end
  local page, problem = cmd:http{ url = verdict.portal_url }
  if not page then return nil, problem end
  for _, form in ipairs(html.forms(page.body, page.url)) do
    local fields, button = {}, nil
    for _, field in ipairs(form.fields) do
      if field.name then fields[field.name] = field end
      if not button and field.type == "submit" then button = field end
    end
    if fields.user and fields.password and fields.cmd and fields.cmd.value == "authenticate" then
      return { page = page, form = form, button = button or false }
    end
  end
end

local function log_in(cmd, answers)
  local found, problem = portal(cmd)
  if problem == "connected" then return "success" end
  if not found then
    if problem then
      log.warn("the portal did not answer: " .. problem)
      return "temporary_failure"
    end
    return "unsupported_network"
  end
  local given = family.credentials(cmd, answers)
  if not given then
    if answers then return "failure" end
    return "ui_required"
  end
  local answer, why = cmd:submit(found.form, { values = { user = given.username, password = given.password }, button = found.button })
  if not answer then
    log.warn("the controller did not answer the login: " .. why)
    return "temporary_failure"
  end
  if cmd:probe().state == "connected" then
    cmd.store.logout_url = url.resolve(found.page.url, "/cgi-bin/login?cmd=logout")
    return "success"
  end
  log.warn("the controller refused the login: " .. html.text(answer.body):sub(1, 200))
  if answers then return "failure" end
  return "ui_required"
end

return {
  name = "Aruba",
  hosts = { "@portal" },  -- only the controller's page the probe was sent to
  ui = family.login_questions("This network asks for a username and password."),

  evaluate = function(cmd)
    return portal(cmd) and "low" or "none"
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
    local answer, why = cmd:http{ url = logout }
    if not answer then
      log.warn("the controller did not answer the logout: " .. why)
      return "failure"
    end
    cmd.store.logout_url = nil
    return "success"
  end,
}
