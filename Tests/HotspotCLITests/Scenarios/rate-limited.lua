-- Museum Wi-Fi: a terms page behind a rate limiter (the simulator's `rate-limited`). The
-- limiter refuses a login that comes too soon with 429 and a Retry-After header, and
-- every refused attempt restarts its clock: posting again at once is refused for ever.
-- So wait what Retry-After asks, post once more, and leave it to the runtime's own retry
-- (temporary_failure) when even that is refused or the wait is too long for the deadline.

local SSID = "Museum-WiFi"
local LONGEST_WAIT = 20  -- seconds; a longer Retry-After would not fit in the 45 s deadline

local function filled(form)
  local fields = {}
  for _, field in ipairs(form.fields) do
    if field.name then fields[field.name] = field.value end
  end
  return fields
end

-- Retry-After in seconds: delta-seconds, or 1 when it is a date or missing (RFC 9110 10.2.3).
local function retry_after(response)
  return tonumber(response.headers["retry-after"] or "") or 1
end

return {
  name = "Museum Wi-Fi",
  hosts = { "portal.museum.example" },

  evaluate = function(cmd)
    return cmd.network.ssid == SSID and "high" or "none"
  end,

  authenticate = function(cmd)
    local verdict = cmd:probe()
    if verdict.state == "connected" then return "success" end
    if not verdict.portal_url then return "temporary_failure" end
    local page, problem = cmd:http{ url = verdict.portal_url }
    if not page then
      log.warn("the login page did not load: " .. problem)
      return "temporary_failure"
    end
    local form = html.forms(page.body, page.url)[1]
    if not form then
      log.error("no form on " .. page.url)
      return "failure"
    end
    local login = { method = form.method, url = form.action, form = filled(form) }

    local answer, failed = cmd:http(login)
    if answer and answer.status == 429 then
      local wait = retry_after(answer)
      if wait > LONGEST_WAIT then
        log.warn(("429 with Retry-After %d s: too long to wait now"):format(wait))
        return "temporary_failure"
      end
      log.info(("429: waiting %d s as Retry-After asks"):format(wait))
      sleep(wait)  -- real time is the point: the simulated portal times the wait
      answer, failed = cmd:http(login)
    end
    if not answer or answer.status ~= 200 then
      log.warn("the portal refused the terms: " .. (failed or answer.status))
      return "temporary_failure"
    end
    log.info("logged in")
    cmd.store.logout_url = url.resolve(page.url, "/logout")
    return cmd:probe().state == "connected" and "success" or "failure"
  end,

  maintain = function(cmd)
    return cmd:probe().state == "connected" and "success" or "authentication_required"
  end,

  logoff = function(cmd)
    if cmd.store.logout_url then cmd:http{ url = cmd.store.logout_url } end
    cmd.store.logout_url = nil
    return "success"
  end,
}
