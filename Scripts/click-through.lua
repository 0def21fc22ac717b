-- Any terms-of-use page, for networks no venue script knows: it claims a network with
-- `low` confidence when the portal's page has a form that asks for nothing but the
-- acceptance of its terms (no password, no email address), ticks the boxes, submits
-- it and checks with the connectivity probe that the network is open.
-- Networks whose portal speaks WISPr or has an RFC 8908 API are left to wispr.lua and
-- capport.lua.

local ASKS_A_PERSON = { password = true, email = true, text = true, tel = true, number = true, textarea = true }

-- The terms form of a page: a form with a checkbox or a submit button and no field
-- only a person can fill in.
local function terms_form(page)
  for _, form in ipairs(html.forms(page.body, page.url)) do
    local accepts, asks = false, false
    for _, field in ipairs(form.fields) do
      if field.type == "checkbox" or field.type == "submit" then accepts = true end
      if ASKS_A_PERSON[field.type] and field.name and not field.disabled then asks = true end
    end
    if accepts and not asks then return form end
  end
end

-- The portal's page, and its terms form, when the probe finds a portal.
local function portal(cmd)
  local verdict = cmd:probe()
  if verdict.state == "connected" then return nil, "connected" end
  if not verdict.portal_url then return nil, "no portal: " .. table.concat(verdict.details, "; ") end
  local page, problem = cmd:http{ url = verdict.portal_url }
  if not page then return nil, "the portal did not answer: " .. problem end
  return page, terms_form(page)
end

local DECLINES = { "decline", "reject", "refuse", "cancel", "disagree", "no thanks" }

-- Whether a submit button's name or label says no.
local function declines(field)
  local words = ((field.name or "") .. " " .. (field.value or "")):lower()
  for _, word in ipairs(DECLINES) do
    if words:find(word, 1, true) then return true end
  end
  return false
end

-- What a browser sends when a person ticks every box and clicks the accepting button: no
-- disabled field, the checked radio of each group, and of the submit buttons only the
-- first that does not decline.
local function accepted(form)
  local fields, clicked = {}, false
  for _, field in ipairs(form.fields) do
    if field.name and not field.disabled then
      if field.type == "submit" or field.type == "image" then
        if not clicked and not declines(field) then
          fields[field.name], clicked = field.value, true
        end
      elseif field.type == "radio" then
        if field.checked then fields[field.name] = field.value end
      elseif field.type ~= "button" and field.type ~= "reset" then
        fields[field.name] = field.value  -- a checkbox is sent ticked
      end
    end
  end
  return fields
end

return {
  name = "Click-through",
  hosts = { "@portal" },  -- only what the network names as its portal

  evaluate = function(cmd)
    local page, form = portal(cmd)
    if not page or not form or wispr.parse(page.body) then return "none" end
    local api = capport.fetch(cmd)
    if api and api.captive then return "none" end  -- capport.lua's
    return "low"
  end,

  authenticate = function(cmd)
    local page, form = portal(cmd)
    if form == "connected" then return "success" end
    if not page then
      log.warn(form)
      return "temporary_failure"
    end
    if not form then return "unsupported_network" end
    local fields = accepted(form)
    local request = { method = "POST", url = form.action, form = fields }
    if form.method == "get" then
      request = { url = form.action .. (form.action:find("?", 1, true) and "&" or "?") .. url.query(fields) }
    end
    local answer, problem = cmd:http(request)
    if not answer then
      log.warn("the terms were not sent: " .. problem)
      return "temporary_failure"
    end
    local verdict = cmd:probe()
    if verdict.state == "connected" then return "success" end
    log.error("still " .. verdict.state .. " after accepting the terms (status " .. answer.status .. ")")
    return "failure"
  end,

  maintain = function(cmd)
    return cmd:probe().state == "connected" and "success" or "authentication_required"
  end,
}
