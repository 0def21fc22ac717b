-- Harbour Bar: a portal that misbehaves every way a portal can (the simulator's `hostile`).
-- The login page is messy HTML with decoy forms in a comment and a script; html.forms reads
-- it as a browser does, so the real form is the one posting to /login. Around the login the
-- portal serves a banner (/huge, 50 MiB), a compressed page (/gzip-bomb, 64 MiB inflated), a
-- status page that never ends (/drip), a redirect loop (/loop), a broken status feed
-- (/bad.json), a broken WISPr message (/bad.xml) and a page built to hang parsers
-- (/pathological.html): the script fetches each with limits suited to what it expects,
-- logs what went wrong, and logs in all the same.

local SSID = "Harbour-Bar"

-- The extras, each with the limits of a page that small: every one of them fails.
local EXTRAS = {
  { path = "/huge", max_body = 256 * 1024 },
  { path = "/gzip-bomb", max_body = 256 * 1024 },
  { path = "/drip", timeout = 1 },
  { path = "/loop", max_redirects = 5 },
}

local function fetch_extras(cmd, base)
  for _, extra in ipairs(EXTRAS) do
    local answer, problem = cmd:http{ url = url.resolve(base, extra.path), timeout = extra.timeout or 5,
                                      max_body = extra.max_body, max_redirects = extra.max_redirects }
    if answer then
      log.info(("%s: %d, %d bytes"):format(extra.path, answer.status, #answer.body))
    else
      log.warn(("%s: %s"):format(extra.path, problem))
    end
  end
  -- Broken documents: json.decode raises an error saying where; wispr.parse recovers what
  -- libxml2 can, and says so when what it recovers is not a WISPr message.
  local feed = cmd:http{ url = url.resolve(base, "/bad.json"), max_body = 1024 * 1024 }
  local decoded, problem = pcall(json.decode, feed and feed.body or "")
  if decoded then log.info("/bad.json: read") else log.warn("/bad.json: " .. tostring(problem)) end
  local gateway = cmd:http{ url = url.resolve(base, "/bad.xml"), max_body = 64 * 1024 }
  local message, broken = wispr.parse(gateway and gateway.body or "")
  if message then
    log.info(("/bad.xml: recovered a %s message, response code %s"):format(message.message, tostring(message.response_code)))
  else
    log.warn("/bad.xml: " .. tostring(broken))
  end
  -- A 2 MiB page built to make parsers hang: html.forms reads it in its limits.
  local page = cmd:http{ url = url.resolve(base, "/pathological.html"), max_body = 4 * 1024 * 1024 }
  local ok, forms = pcall(html.forms, page and page.body or "", base)
  log.info("/pathological.html: " .. (ok and (#forms .. " forms") or tostring(forms)))
end

-- The form that logs in: the one whose action is /login, whatever else the page holds.
local function login_form(page)
  for _, form in ipairs(html.forms(page.body, page.url)) do
    if url.parse(form.action).path == "/login" then return form end
  end
end

return {
  name = "Harbour Bar",
  hosts = { "portal.harbour.example" },

  evaluate = function(cmd)
    return cmd.network.ssid == SSID and "high" or "none"
  end,

  authenticate = function(cmd)
    local verdict = cmd:probe()
    if verdict.state == "connected" then return "success" end
    if not verdict.portal_url then return "temporary_failure" end
    local page, problem = cmd:http{ url = verdict.portal_url, max_body = 256 * 1024, timeout = 5 }
    if not page then
      log.warn("the login page did not load: " .. problem)
      return "temporary_failure"
    end
    local form = login_form(page)
    if not form then
      log.error("no login form on " .. page.url)
      return "failure"
    end
    -- Hidden fields as the parser decoded them, checked boxes only, nothing a person types.
    local fields = {}
    for _, field in ipairs(form.fields) do
      if field.name and (field.type == "hidden" or field.checked) then fields[field.name] = field.value end
    end
    fetch_extras(cmd, page.url)
    local answer, failed = cmd:http{ method = form.method, url = form.action, form = fields,
                                     max_body = 256 * 1024, timeout = 5 }
    if not answer or answer.status ~= 200 then
      log.warn("the login failed: " .. (failed or answer.status))
      return "temporary_failure"
    end
    cmd.store.logout_url = url.resolve(page.url, "/logout")
    return cmd:probe().state == "connected" and "success" or "failure"
  end,

  maintain = function(cmd)
    return cmd:probe().state == "connected" and "success" or "authentication_required"
  end,

  logoff = function(cmd)
    if cmd.store.logout_url then cmd:http{ url = cmd.store.logout_url, timeout = 5 } end
    cmd.store.logout_url = nil
    return "success"
  end,
}
