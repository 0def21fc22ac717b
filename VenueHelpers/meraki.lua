-- Cisco Meraki's splash pages, as its Captive Portal API (EXCAP) documents them.
-- Click-through: Meraki sends a captive device to the splash page with `base_grant_url` and
-- `user_continue_url` in the query; the page's button only runs a script, which opens
-- `base_grant_url?continue_url=...`. This helper opens that URL itself, as the script would:
-- nothing to ask, nothing secret.
-- Sign-on: the splash page gets `login_url` and `continue_url`; its form posts `username`,
-- `password` and the splash server's `success_url` to `login_url`, and Meraki answers with a
-- redirect to `success_url?logout_url=...`. The username and password come from the secrets
-- file's [meraki] section, else from the person; `logout_url` is kept for logoff.
-- Everything goes to hosts the network named (`@portal`: the splash page's, and where its
-- form posts, as on Meraki's own hosted splash pages).

-- What the probe's redirect says: `{ grant = URL }` (click-through) or `{ splash = URL,
-- login_url = URL }` (sign-on); nil when the portal is not Meraki's, or "connected".
local function splash_of(cmd)
  local verdict = cmd:probe()
  if verdict.state == "connected" then return nil, "connected" end
  if not verdict.portal_url then return nil end
  local query = family.query(verdict.portal_url)
  local base, continue = query.base_grant_url, query.user_continue_url
  if base and continue and base:find("^https?://") then
    return { grant = base .. "?" .. url.query({ { "continue_url", continue } }) }
  end
  if query.login_url and query.continue_url and query.login_url:find("^https?://") then
    return { splash = verdict.portal_url, login_url = query.login_url }
  end
end

-- The sign-on page's form to `login_url` (with a password and `success_url`), and its button.
local function sign_on_form(page, login_url)
  for _, form in ipairs(html.forms(page.body, page.url)) do
    local names, button = {}, nil
    for _, field in ipairs(form.fields) do
      if field.name then names[field.name] = true end
      if not button and (field.type == "submit" or field.type == "image") then button = field end
    end
    if form.action == login_url and names.password and names.success_url then return form, button or false end
  end
end

local function grant(cmd, address)
  -- The grant answers 302 to continue_url, the page the device first asked for: not needed.
  local answer, why = cmd:http{ url = address, follow_redirects = false }
  if not answer then
    log.warn("the grant was not answered: " .. why)
    return "temporary_failure"
  end
  if cmd:probe().state == "connected" then return "success" end
  log.warn("still captive after the grant (status " .. answer.status .. ")")
  return "failure"
end

local function sign_on(cmd, found, answers)
  local page, problem = cmd:http{ url = found.splash }
  if not page then
    log.warn("the splash page did not answer: " .. problem)
    return "temporary_failure"
  end
  local form, button = sign_on_form(page, found.login_url)
  if not form then return "unsupported_network" end
  local given = family.credentials(cmd, answers)
  if not given then
    if answers then return "failure" end
    return "ui_required"
  end
  local answer, why = cmd:submit(form, { values = given, button = button })
  if not answer then
    log.warn("the sign-on was not answered: " .. why)
    return "temporary_failure"
  end
  if cmd:probe().state == "connected" then
    cmd.store.logout_url = family.query(answer.url).logout_url
    return "success"
  end
  log.warn("still captive after the sign-on: " .. html.text(answer.body):sub(1, 200))
  if answers then return "failure" end
  return "ui_required"  -- the secrets were refused: the person may know better
end

local function log_in(cmd, answers)
  local found, problem = splash_of(cmd)
  if problem == "connected" then return "success" end
  if not found then return "unsupported_network" end
  if found.grant then return grant(cmd, found.grant) end
  return sign_on(cmd, found, answers)
end

return {
  name = "Meraki",
  hosts = { "@portal" },  -- only the splash host the probe was sent to, and where its form posts
  ui = family.login_questions("This network asks for a username and password."),

  evaluate = function(cmd)
    return splash_of(cmd) and "low" or "none"
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
    if not logout then return "command_not_recognized" end  -- click-through has no logout
    -- It answers 302 to continue_url, which is captive again: not needed.
    local answer, why = cmd:http{ url = logout, follow_redirects = false }
    if not answer then
      log.warn("the logout was not answered: " .. why)
      return "failure"
    end
    cmd.store.logout_url = nil
    return "success"
  end,
}
