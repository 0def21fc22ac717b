-- The generic path through a splash page (after wispr.lua, see contract.lua), for portals no
-- venue script knows (splash.form, splash.follow): what click-through.lua and capport.lua do,
-- as a person with a browser would, a page at a time, over cmd:submit, cmd:http and cmd:probe.
local SPLASH_STEPS = 6
-- Words of a submit button that says no, or leads away from the login ("Read the terms").
local DECLINES = { "decline", "reject", "refuse", "cancel", "disagree", "no thanks", "read", "more info" }
-- Field types only a person fills in.
local PERSONAL = { text = true, email = true, password = true, tel = true, number = true, textarea = true }
-- What a personal field is, from its type or name: the question's label and kind, and the
-- secret that answers it besides one named after the field.
local KINDS = {
  { match = "mail", label = "Email address", kind = "email", secret = "email" },
  { match = "pass", label = "Password", kind = "password", secret = "password" },
  { match = "voucher", label = "Voucher code", secret = "voucher" },
  { match = "code", label = "Access code", secret = "voucher" },
  { match = "room", label = "Room number", secret = "room" },
  { match = "user", label = "User name", secret = "username" },
  { match = "login", label = "User name", secret = "username" },
  { match = "name", label = "Name", secret = "name" },
}

local function splash_kind(field)
  local words = field.type == "email" and "email" or field.type == "password" and "password" or field.name:lower()
  for _, kind in ipairs(KINDS) do
    if find(words, kind.match, 1, true) then return kind end
  end
  return { label = (gsub(field.name, "[_%-]", " ")), secret = field.name }
end

local function declines(field)
  local words = lower((field.name or "") .. " " .. (field.value or "") .. " " .. (field.label or ""))
  for _, word in ipairs(DECLINES) do
    if find(words, "%f[%a]" .. word .. "%f[%A]") then return true end
  end
  return false
end

-- The fields of `form` only a person fills in: enabled, named, and empty.
local function personal_fields(form)
  local fields = {}
  for _, field in ipairs(form.fields) do
    if PERSONAL[field.type] and field.name and not field.disabled and field.value == "" then fields[#fields + 1] = field end
  end
  return fields
end

-- The form of a page to go on with, and the button to click: the first form with a submit
-- button that does not decline, or with no button but fields to fill in (sent as when the
-- person presses Enter).
local function splash_form(page)
  for _, form in ipairs(html_forms(page.body, page.url)) do
    local buttons = 0
    for _, field in ipairs(form.fields) do
      if (field.type == "submit" or field.type == "image") and not field.disabled then
        buttons = buttons + 1
        if not declines(field) then return form, field end
      end
    end
    if buttons == 0 and #personal_fields(form) > 0 then return form, false end
  end
end

-- What `form` needs of a person, from `answers` or the network's secrets: the values, or
-- the questions to ask for those missing. Every box is ticked.
local function splash_fill(cmd, form, answers)
  local values, questions = {}, nil
  for _, field in ipairs(form.fields) do
    if field.type == "checkbox" and field.name and not field.disabled then values[field.name] = true end
  end
  for _, field in ipairs(personal_fields(form)) do
    local kind = splash_kind(field)
    local found, secret = pcall(cmd.secret, cmd, field.name)
    if not found then found, secret = pcall(cmd.secret, cmd, kind.secret) end
    local value = answers[field.name] or (found and secret or nil)
    if value then
      values[field.name] = value
    else
      questions = questions or {}
      questions[#questions + 1] = { name = field.name, label = kind.label, kind = kind.kind }
    end
  end
  return values, questions
end

-- Where a page with no form leads: its refresh, or its one link.
local function splash_onward(page)
  local refresh = html_meta_refresh(page.body, page.url)
  if refresh and refresh.url then return refresh.url, refresh.delay end
  local links = html_links(page.body, page.url)
  if #links == 1 and find(links[1].url, "^https?://") then return links[1].url, 0 end
end

local function splash_follow(cmd, page, answers)
  if type(page) ~= "table" or type(page.body) ~= "string" or type(page.url) ~= "string" then
    error("splash.follow expects a response of cmd:http as its page", 2)
  end
  -- With the person's answers (present_ui) there is no one left to ask.
  local may_ask = answers == nil
  answers = answers or {}
  for step = 1, SPLASH_STEPS do
    local form, button = splash_form(page)
    local answer, problem
    if form then
      local values, questions = splash_fill(cmd, form, answers)
      if questions and not may_ask then
        return "temporary_failure", "the portal at " .. page.url .. " asks for more than the person answered"
      elseif questions then
        return "ui_required", {
          title = "Wi-Fi login",
          message = "The portal at " .. (url_parse(page.url).host or page.url) .. " asks for this before it lets the device in.",
          fields = questions,
        }
      end
      answer, problem = cmd:submit(form, { values = values, button = button })
    else
      local onward, delay = splash_onward(page)
      if not onward then
        return "failure", "still captive at step " .. step .. ": " .. page.url .. " has no form, refresh or lone link to go on with"
      end
      if delay > 0 then sleep(min(delay, 5)) end
      answer, problem = cmd:http{ url = onward }
    end
    if not answer then return "temporary_failure", "the portal did not answer step " .. step .. ": " .. problem end
    if cmd:probe().state == "connected" then return "success" end
    page = answer
  end
  return "failure", "still captive after " .. SPLASH_STEPS .. " steps through the portal (the last page " .. page.url .. ", status " .. page.status .. ")"
end

globals.splash = readonly({ form = splash_form, follow = splash_follow }, "splash")
