-- An example venue script: a hotel whose guest Wi-Fi is secured with a password (WPA) and
-- whose portal asks for the voucher code printed on the room key card.
--
-- It shows the rest of the contract: supplying the network's password from the scan list
-- (`filter_scan_list`), asking a person when only a person knows the answer (`ui_required`,
-- then `present_ui`), remembering things across restarts (`cmd.store`), credentials kept
-- out of the script (`cmd:secret`), and logging off.
--
-- The secrets file (given with --secrets, readable by its owner only) holds:
--     [voucher]
--     wifi_password = the hotel's WPA password

local OUR_NETWORK = "Example-Hotel"
local PORTAL = "wifi.example-hotel.example"

-- Sends a voucher code to the portal; true when the device is online afterwards.
local function redeem(cmd, code)
  local answer, problem = cmd:http{
    method = "POST",
    url = "http://" .. PORTAL .. "/voucher",
    form = { code = code },
  }
  if not answer then
    log.warn("the portal did not answer: " .. problem)
    return false
  end
  return cmd:probe().state == "connected"
end

return {
  name = "Example Hotel",
  hosts = { PORTAL },

  -- Called while the person looks at the list of networks: claim yours, and give its
  -- password so they never type it. No network traffic here.
  filter_scan_list = function(cmd)
    local ours = {}
    for _, network in ipairs(cmd.network_list) do
      if network.ssid == OUR_NETWORK then
        network:set_password(cmd:secret("wifi_password"))
        ours[#ours + 1] = network
      end
    end
    local response = cmd:create_response("success")
    response:set_network_list(ours)
    response:deliver()
  end,

  evaluate = function(cmd)
    return cmd.network.ssid == OUR_NETWORK and "high" or "none"
  end,

  -- A code used before (kept in cmd.store, per network, across restarts) logs in again
  -- silently; without one, only the guest knows it: ask them.
  authenticate = function(cmd)
    if cmd:probe().state == "connected" then return "success" end
    local saved = cmd.store.voucher
    if saved and redeem(cmd, saved) then return "success" end
    return "ui_required"
  end,

  -- The person opened the helper's form and typed the code (`cmd.answers`).
  present_ui = function(cmd)
    local code = cmd.answers.voucher
    if not code or code == "" then return "failure" end
    if not redeem(cmd, code) then return "failure" end
    cmd.store.voucher = code
    return "success"
  end,

  maintain = function(cmd)
    return cmd:probe().state == "connected" and "success" or "authentication_required"
  end,

  -- The person asked to leave: end the session at the portal, forget the code.
  logoff = function(cmd)
    cmd:http{ url = "http://" .. PORTAL .. "/logout" }
    cmd.store.voucher = nil
    return "success"
  end,
}
