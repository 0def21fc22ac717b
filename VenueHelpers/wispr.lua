-- Any WISPr gateway (WISPr 1.0 and 2.0 smart-client login), for networks no venue script
-- knows. It claims a network with `low` confidence when the portal's page carries a WISPr
-- Redirect, so a venue's own script (answering `high`) always wins.
--
-- Credentials come from the secrets file, section [wispr]: `username` and `password`, or
-- `username.SSID` and `password.SSID` for one network. Without them it claims nothing (evaluate
-- asks whether they are there, as it may not read them);
-- when the gateway refuses them it asks a person (present_ui with answers `username` and
-- `password`).

-- The secret `name` for this network, or the general one, or nil.
local function credential(cmd, name)
  for _, key in ipairs({ name .. "." .. cmd.network.ssid, name }) do
    local found, value = pcall(cmd.secret, cmd, key)
    if found then return value end
  end
end

-- Whether `credential` would find the secret: all evaluate may know of it.
local function has_credential(cmd, name)
  return cmd:has_secret(name .. "." .. cmd.network.ssid) or cmd:has_secret(name)
end

local TRY_AGAIN_LATER = {
  radius_error = true, network_admin_error = true, gateway_error = true, unreachable = true, pending = true,
}

-- The command's answer to what wispr.login said.
local function answer(login)
  if login.result == "success" then return "success" end
  log.warn("WISPr login: " .. login.result .. (login.reply and (" (" .. login.reply .. ")") or ""))
  if login.result == "login_failed" then return "ui_required" end
  if login.result == "not_wispr" then return "unsupported_network" end
  if TRY_AGAIN_LATER[login.result] then return "temporary_failure" end
  return "failure"
end

return {
  name = "WISPr",
  hosts = { "@portal" },  -- only what the network names as its portal

  evaluate = function(cmd)
    if not has_credential(cmd, "username") then return "none" end
    local verdict = cmd:probe()
    if verdict.state ~= "captive" or not verdict.portal_url then return "none" end
    -- The probe found a WISPr Redirect in the page the portal put in its way.
    if verdict.portal_url_source == "wispr" then return "low" end
    local page = cmd:http{ url = verdict.portal_url, follow_redirects = false }
    local message = page and wispr.parse(page.body)
    local speaks = message and (message.message == "redirect" or message.message == "proxy")
    return speaks and "low" or "none"
  end,

  authenticate = function(cmd)
    return answer(wispr.login(cmd, { username = credential(cmd, "username"), password = credential(cmd, "password") }))
  end,

  present_ui = function(cmd)
    local username, password = cmd.answers.username, cmd.answers.password
    if not username or not password then return "failure" end
    return answer(wispr.login(cmd, { username = username, password = password }))
  end,

  maintain = function(cmd)
    return cmd:probe().state == "connected" and "success" or "authentication_required"
  end,

  logoff = function(cmd)
    local logoff = wispr.logoff(cmd)
    if logoff.result ~= "success" then log.warn("WISPr logoff: " .. logoff.result) end
    return "success"
  end,
}
