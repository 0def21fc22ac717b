-- pfSense's captive portal (and the custom pages made for it): its page posts `auth_user`
-- and `auth_pass`, or `auth_voucher`, with the hidden `zone` and `redirurl` and the button
-- `accept`. One form asks for a voucher or for a username and password, where the generic
-- path would ask for all three: this helper sends what the secrets file's [pfsense] section
-- has (`voucher`, or `username` and `password`), else asks the person for either. The page
-- after the login carries the logout form (`logout_id`, `zone`), kept for logoff.

local QUESTIONS = {
  title = "Wi-Fi login",
  message = "This network lets you in with a voucher code, or with a username and password.",
  fields = {
    { name = "voucher", label = "Voucher code", required = false },
    { name = "username", label = "User name", required = false },
    { name = "password", label = "Password", kind = "password", required = false },
  },
}

-- The page's pfSense login form, its `accept` button and its field names; nil for another portal.
local function login_form(page)
  for _, form in ipairs(html.forms(page.body, page.url)) do
    local names, accept = {}, nil
    for _, field in ipairs(form.fields) do
      if field.name then names[field.name] = true end
      if field.name == "accept" and (field.type == "submit" or field.type == "image") then accept = field end
    end
    if form.method:lower() == "post" and accept and names.zone and (names.auth_user or names.auth_voucher) then
      return form, accept, names
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

-- The fields that log in: a voucher, else a username and password; nil when there are none.
local function credentials(cmd, answers, names)
  local given = answers or {}
  if not answers then
    for _, name in ipairs({ "voucher", "username", "password" }) do
      local found, value = pcall(cmd.secret, cmd, name)
      if found then given[name] = value end
    end
  end
  if names.auth_voucher and (given.voucher or "") ~= "" then return { auth_voucher = given.voucher } end
  if names.auth_user and (given.username or "") ~= "" and (given.password or "") ~= "" then
    return { auth_user = given.username, auth_pass = given.password }
  end
end

-- Keeps the logout form of the page after the login.
local function keep_logout(cmd, page)
  for _, form in ipairs(html.forms(page.body, page.url)) do
    local fields = {}
    for _, field in ipairs(form.fields) do
      if field.name then fields[field.name] = field.value end
    end
    if fields.logout_id then
      cmd.store.logout_url, cmd.store.logout_id, cmd.store.zone = form.action, fields.logout_id, fields.zone or ""
      return
    end
  end
end

local function log_in(cmd, answers)
  local page, problem = portal(cmd)
  if problem == "connected" then return "success" end
  if not page then return "temporary_failure" end
  local form, accept, names = login_form(page)
  if not form then return "unsupported_network" end
  local values = credentials(cmd, answers, names)
  if not values then
    if not answers then return "ui_required" end
    log.warn("the person gave neither a voucher nor a username and password")
    return "failure"
  end
  local answer, why = cmd:submit(form, { values = values, button = accept })
  if not answer then
    log.warn("the portal did not answer the login: " .. why)
    return "temporary_failure"
  end
  if cmd:probe().state == "connected" then
    keep_logout(cmd, answer)
    return "success"
  end
  log.warn("the portal refused the login: " .. html.text(answer.body):sub(1, 200))
  if answers then return "failure" end
  return "ui_required"
end

return {
  name = "pfSense",
  hosts = { "@portal" },  -- only the portal the probe was sent to
  ui = QUESTIONS,

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
    if not cmd.store.logout_url then return "success" end
    local answer, why = cmd:http{
      url = cmd.store.logout_url, form = { { "logout_id", cmd.store.logout_id }, { "zone", cmd.store.zone }, { "logout", "Logout" } },
    }
    if not answer then
      log.warn("the portal did not answer the logout: " .. why)
      return "failure"
    end
    cmd.store.logout_url, cmd.store.logout_id, cmd.store.zone = nil, nil, nil
    return "success"
  end,
}
