-- MikroTik HotSpot. Its login page posts `username`, `password`, `dst` and `popup`; with
-- HTTP-CHAP (the default) the page's script sends the `sendin` form with the password as
-- hexMD5(chap-id + password + chap-challenge), the id and the challenge written into the
-- script as strings of octal escapes, which no form filler computes: this helper does, with
-- `crypto.md5`. With HTTP-PAP it sends the password itself. The username and password come
-- from the secrets file's [mikrotik] section, else from the person. `maintain` reads its
-- status page, `logoff` opens its logout page.

-- The page's login forms: `login` (what the person fills in) and `sendin` (what CHAP sends),
-- nil for another portal.
local function forms(page)
  local found = {}
  for _, form in ipairs(html.forms(page.body, page.url)) do
    local names = {}
    for _, field in ipairs(form.fields) do
      if field.name then names[field.name] = true end
    end
    if names.username and names.password and names.dst and names.popup then found[form.name or ""] = form end
  end
  if found.login then return found end
end

-- A JavaScript string of the page as its bytes: RouterOS writes them as octal escapes.
local function js_bytes(text)
  return (text:gsub("\\(%d%d?%d?)", function(digits) return string.char(tonumber(digits, 8)) end))
end

local function portal(cmd)
  local verdict = cmd:probe()
  if verdict.state == "connected" then return nil, "connected" end
  if not verdict.portal_url then return nil end
  return cmd:http{ url = verdict.portal_url }
end

local function log_in(cmd, answers)
  local page, problem = portal(cmd)
  if problem == "connected" then return "success" end
  local found = page and forms(page)
  if not found then return "unsupported_network" end
  local given = family.credentials(cmd, answers)
  if not given then return "ui_required" end
  local username, password = given.username, given.password
  local form, sent = found.login, password
  local id, challenge = page.body:match("hexMD5%(%s*'([^']*)'%s*%+.-%+%s*'([^']*)'%s*%)")
  if id and found.sendin then
    form, sent = found.sendin, crypto.md5(js_bytes(id) .. password .. js_bytes(challenge))
  end
  local answer, why = cmd:submit(form, { values = { username = username, password = sent } })
  if not answer then
    log.warn("the hotspot did not answer the login: " .. why)
    return "temporary_failure"
  end
  if cmd:probe().state == "connected" then
    cmd.store.status_url, cmd.store.logout_url = url.resolve(form.action, "/status"), url.resolve(form.action, "/logout")
    return "success"
  end
  log.warn("the hotspot refused the login: " .. html.text(answer.body):sub(1, 200))
  if answers then return "failure" end
  return "ui_required"
end

return {
  name = "MikroTik",
  hosts = { "@portal" },  -- only the hotspot the probe was sent to
  ui = family.login_questions("This hotspot asks for a username and password."),

  evaluate = function(cmd)
    local page = portal(cmd)
    return (page and forms(page)) and "low" or "none"
  end,

  authenticate = function(cmd)
    return log_in(cmd)
  end,

  present_ui = function(cmd)
    return log_in(cmd, cmd.answers)
  end,

  -- The status page answers only a logged-in device; others are sent to the login page.
  maintain = function(cmd)
    if not cmd.store.status_url then return cmd:probe().state == "connected" and "success" or "authentication_required" end
    local page = cmd:http{ url = cmd.store.status_url, follow_redirects = false }
    return (page and page.status == 200) and "success" or "authentication_required"
  end,

  logoff = function(cmd)
    if not cmd.store.logout_url then return "success" end
    local page, why = cmd:http{ url = cmd.store.logout_url }
    if not page then
      log.warn("the hotspot did not answer the logout: " .. why)
      return "failure"
    end
    cmd.store.status_url, cmd.store.logout_url = nil, nil
    return "success"
  end,
}
