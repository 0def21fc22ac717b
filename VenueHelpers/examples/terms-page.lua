-- An example venue script: a café whose Wi-Fi shows a "accept the terms" page.
--
-- Copy this file, change the four settings below, and check it:
--     hotspot-helper check my-venue.lua
-- Try it against the simulator's terms page (`hotspot-helper simulate --scenario click-through`).
--
-- The device runs your script as a *helper*. When it joins a network it asks every helper
-- `evaluate` ("is this yours?"); the most confident one gets `authenticate` ("log in"),
-- later `maintain` ("still logged in?"), and `logoff` when the person asks to leave.

local OUR_NETWORK = "Example-Cafe"              -- the Wi-Fi name (SSID) of your venue
local PORTAL = "portal.example-cafe.example"    -- the host name of your login page

return {
  -- Shown to people beside your network: 15 characters at most.
  name = "Example Cafe",

  -- The only hosts this script may talk to. Anything else is refused, so a mistake in
  -- the script can never send data elsewhere.
  hosts = { PORTAL },

  -- "Is this network yours?" Answer "high" for your own network, "none" for others.
  -- ("low" is for generic scripts that might handle any network.)
  evaluate = function(cmd)
    if cmd.network.ssid == OUR_NETWORK then return "high" end
    return "none"
  end,

  -- "Log in." Answer "success" once the device is online.
  authenticate = function(cmd)
    -- 1. Ask the runtime's connectivity probe where the portal sends people.
    local probe = cmd:probe()
    if probe.state == "connected" then return "success" end  -- already online
    if not probe.portal_url then return "temporary_failure" end  -- try again in a moment

    -- 2. Load the terms page.
    local page, problem = cmd:http{ url = probe.portal_url }
    if not page then
      log.warn("the terms page did not load: " .. problem)
      return "temporary_failure"
    end

    -- 3. Read its form and send it back as a browser does when the box is ticked and the
    --    button clicked.
    local form = html.forms(page.body, page.url)[1]
    if not form then
      log.error("no form on " .. page.url)
      return "failure"  -- the page changed: the script needs an update
    end
    local ticked = {}
    for _, field in ipairs(form.fields) do
      if field.type == "checkbox" and field.name then ticked[field.name] = true end
    end
    cmd:submit(form, { values = ticked })

    -- 4. Online now?
    if cmd:probe().state == "connected" then return "success" end
    return "failure"
  end,

  -- "Still logged in?" The runtime asks every few minutes. When the session has ended,
  -- answer "authentication_required" and the runtime calls authenticate again.
  maintain = function(cmd)
    if cmd:probe().state == "connected" then return "success" end
    return "authentication_required"
  end,
}
