-- What the family helpers (VenueHelpers/ for gateways with a protocol of their own) share:
-- the fields of a portal's redirect, and the credentials of the person's answers or the
-- network's secrets. Joined after splash.lua (see contract.lua).
local url_decode = host[MODULE.url].decode

-- The fields of `address`'s query, decoded (`+` as a space); the last of a repeated name.
local function family_query(address)
  if type(address) ~= "string" then error("family.query expects a URL", 2) end
  local fields = {}
  for pair in gmatch(url_parse(address).query or "", "[^&]+") do
    local name, value = pair:match("^([^=]*)=?(.*)$")
    fields[url_decode((gsub(name, "%+", " ")))] = url_decode((gsub(value, "%+", " ")))
  end
  return fields
end

-- The values of `names` (default username and password), by name: from `answers` when the
-- person gave them (present_ui), else from the network's secrets; nil unless each is there
-- and not empty.
local function family_credentials(cmd, answers, names)
  names = names or { "username", "password" }
  local values = {}
  for _, name in ipairs(names) do
    local value
    if answers then
      value = answers[name]
    else
      local found, secret = pcall(cmd.secret, cmd, name)
      value = found and secret or nil
    end
    if type(value) ~= "string" or value == "" then return nil end
    values[name] = value
  end
  return values
end

-- The questions for a username and password, which family_credentials reads back.
local function family_login_questions(message)
  return {
    title = "Wi-Fi login",
    message = message,
    fields = {
      { name = "username", label = "User name" },
      { name = "password", label = "Password", kind = "password" },
    },
  }
end

globals.family = readonly({ query = family_query, credentials = family_credentials, login_questions = family_login_questions }, "family")
