-- Any splash page, for networks no venue script knows: it claims a network with `low`
-- confidence when the portal's page has a form it can go on with, and follows the portal
-- as a person with a browser would (splash.follow): each page's form submitted with the
-- boxes ticked and the accepting button clicked, a meta refresh or a lone link followed,
-- the connectivity probe asked after each step. What only a person knows (a name, an email
-- address, a room, a voucher, a password) comes from the secrets file's [click-through]
-- section, or from the person: `ui_required` with the page's questions, and `present_ui`
-- walks the portal again with their answers.
-- Networks whose portal speaks WISPr or has an RFC 8908 API are left to wispr.lua and
-- capport.lua, pfSense's login form (a voucher or a username and password) to pfsense.lua,
-- OPNsense's page, whose form only its script sends (to the access API), to opnsense.lua,
-- MikroTik's (a form with `dst` and `popup`, whose password its script may hash) to mikrotik.lua,
-- Meraki's sign-on form (`success_url`, whose logout URL comes back) to meraki.lua, a Cisco
-- WLC's (`buttonClicked`, which only its script sets to 4) to cisco-wlc.lua, Aruba's (`user`,
-- `password`, `cmd`, with a logout of its own) to aruba.lua.

-- The portal's first page, when the probe finds a portal; otherwise nil and "connected" or why not.
local function portal(cmd)
  local verdict = cmd:probe()
  if verdict.state == "connected" then return nil, "connected" end
  if not verdict.portal_url then return nil, "no portal: " .. table.concat(verdict.details, "; ") end
  local page, problem = cmd:http{ url = verdict.portal_url }
  if not page then return nil, "the portal did not answer: " .. problem end
  return page
end

-- Whether `form` is a family's login form, which only its helper fills in right (or logs
-- off from): pfSense's, MikroTik's, Meraki's sign-on, a Cisco WLC's or Aruba's.
local function is_family(form)
  local names = {}
  for _, field in ipairs(form.fields) do
    if field.name then names[field.name] = true end
  end
  if names.zone and names.accept and (names.auth_user or names.auth_voucher) then return true end
  if names.username and names.password and names.dst and names.popup then return true end
  if names.password and names.success_url then return true end
  if names.buttonClicked and names.redirect_url and names.err_flag then return true end
  return (names.user and names.password and names.cmd) or false
end

-- Logs in; with the person's `answers` in present_ui.
local function log_in(cmd, answers)
  local page, problem = portal(cmd)
  if problem == "connected" then return "success" end
  if not page then
    log.warn(problem)
    return "temporary_failure"
  end
  local result, detail = splash.follow(cmd, page, answers)
  if type(detail) == "string" then log.warn(detail) end
  return result, detail
end

return {
  name = "Click-through",
  hosts = { "@portal" },  -- only what the network names as its portal, and where its pages' forms go

  evaluate = function(cmd)
    local page = portal(cmd)
    local form = page and splash.form(page)
    if not form or wispr.parse(page.body) or is_family(form) then return "none" end
    if page.body:find("/api/captiveportal/access/", 1, true) then return "none" end  -- opnsense.lua's
    local api = capport.fetch(cmd)
    if api and api.captive then return "none" end  -- capport.lua's
    return "low"
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
}
