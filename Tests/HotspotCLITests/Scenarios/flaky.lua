-- Beach Kiosk: a terms page whose login service is often busy (the simulator's `flaky`).
-- A 503 is transient: post again after a short backoff that doubles each time, and give up
-- with temporary_failure (the runtime retries the join later) well before the command's
-- deadline (45 s). Any other refusal is not worth retrying.

local SSID = "Beach-Kiosk"
local FIRST_BACKOFF = 0.25  -- seconds; doubles after each 503
local GIVE_UP_AFTER = 20    -- seconds of retrying, inside the 45 s deadline

-- Every named field of the form with its value, which ticks the terms checkbox.
local function filled(form)
  local fields = {}
  for _, field in ipairs(form.fields) do
    if field.name then fields[field.name] = field.value end
  end
  return fields
end

return {
  name = "Beach Kiosk",
  hosts = { "portal.beach.example" },

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
    local fields = filled(form)

    local started, backoff, attempt = time.now(), FIRST_BACKOFF, 1
    while true do
      local answer, failed = cmd:http{ method = form.method, url = form.action, form = fields }
      if answer and answer.status == 200 then break end
      if not answer or answer.status ~= 503 then
        log.warn("the portal refused the terms: " .. (failed or answer.status))
        return "temporary_failure"
      end
      if time.now() - started + backoff > GIVE_UP_AFTER then
        log.warn(("attempt %d: 503, giving up after %.1f s"):format(attempt, time.now() - started))
        return "temporary_failure"
      end
      log.info(("attempt %d: 503, trying again in %.2f s"):format(attempt, backoff))
      sleep(backoff)  -- real time is the point: the simulated portal times the wait
      backoff, attempt = backoff * 2, attempt + 1
    end
    log.info(("attempt %d: logged in"):format(attempt))
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
