-- UniFi Network's own guest portal (hotspot), as the controller serves it (port 8880,
-- /guest/s/SITE/). Its page is an app with no form a browser submits: its script reads
-- `hotspotconfig` and posts JSON to `login`, `{"by": "none"}` for click-through,
-- `{"by": "voucher", "voucher": ...}` or `{"by": "password", "password": ...}`, and the
-- controller answers `{"meta": {"rc": "ok"}, "data": [{"authorized": true}]}` or an error.
-- Every call needs the `ec` cookie the page sets, kept in the helper's jar. A voucher or
-- password comes from the secrets file's [unifi] section, else from the person. The guest
-- portal has no logout: the session ends when it expires.

-- The guest portal when the probe is sent to one: its page and the URL the device asked for.
local function portal(cmd)
  local verdict = cmd:probe()
  if verdict.state == "connected" then return nil, "connected" end
  if not verdict.portal_url then return nil end
  local path = url.parse(verdict.portal_url).path or ""
  local query = family.query(verdict.portal_url)
  if not path:find("^/guest/s/[^/]+/$") or not query.id or not query.url then return nil end
  return { page = verdict.portal_url, url = query.url }
end

-- What the controller answers, decoded: its `meta` and first `data` entry, or nil and why not.
local function call(cmd, options)
  local reply, problem = cmd:http(options)
  if not reply then return nil, problem end
  local ok, answer = pcall(json.decode, reply.body)
  if not ok or type(answer) ~= "table" or type(answer.meta) ~= "table" then
    return nil, "the controller's answer is not its API's JSON: " .. reply.url .. " (status " .. reply.status .. ")"
  end
  return { rc = answer.meta.rc, msg = answer.meta.msg, data = type(answer.data) == "table" and answer.data[1] or {} }
end

-- The way in the portal's configuration offers, and what it needs of a person.
local function method(config)
  if config.auth == "none" then return "none" end
  if config.voucher_enabled then return "voucher", { name = "voucher", label = "Voucher code" } end
  if config.password_enabled then return "password", { name = "password", label = "Password", kind = "password" } end
end

local function log_in(cmd, answers)
  local found, problem = portal(cmd)
  if problem == "connected" then return "success" end
  if not found then return "unsupported_network" end
  local page, why = cmd:http{ url = found.page }  -- sets the `ec` cookie
  if not page then
    log.warn("the guest portal did not answer: " .. why)
    return "temporary_failure"
  end
  local config
  config, why = call(cmd, { url = url.resolve(found.page, "hotspotconfig") })
  if not config or config.rc ~= "ok" then
    log.warn("no hotspotconfig: " .. (why or tostring(config.msg)))
    return "temporary_failure"
  end
  local by, question = method(config.data)
  if not by then
    log.warn("the guest portal offers no way in without a payment or an account")
    return "unsupported_network"
  end
  local body = { by = by, url = found.url }
  if question then
    local given = family.credentials(cmd, answers, { by })
    if not given then
      if answers then return "failure" end
      return "ui_required", { title = "Wi-Fi login", message = "This network's guest portal asks for a " .. question.label:lower() .. ".", fields = { question } }
    end
    body[by] = given[by]
  end
  local answer
  answer, why = call(cmd, { url = url.resolve(found.page, "login"), method = "POST", json = body })
  if not answer then
    log.warn("the login was not answered: " .. why)
    return "temporary_failure"
  end
  if answer.rc == "ok" and answer.data.authorized and cmd:probe().state == "connected" then return "success" end
  log.warn("the guest portal refused the login: " .. tostring(answer.msg or answer.rc))
  if answers or not question then return "failure" end
  return "ui_required", { title = "Wi-Fi login", message = "The guest portal refused the saved " .. question.label:lower() .. ".", fields = { question } }
end

return {
  name = "UniFi",
  hosts = { "@portal" },  -- only the controller's portal the probe was sent to

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
}
