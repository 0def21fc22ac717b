---@meta hotspot-helper
-- Definitions of the hotspot-helper script API for the Lua language server
-- (LuaLS, sumneko). Point your editor at this folder, for example in `.luarc.json`:
--   { "workspace.library": ["/path/to/hotspot-helper/docs/lua"] }
-- Nothing here runs: the runtime provides these values. See docs/SCRIPTING.md.

---@alias Confidence "none"|"low"|"high"
---@alias CommandResult "success"|"failure"|"ui_required"|"command_not_recognized"|"authentication_required"|"unsupported_network"|"temporary_failure"
---@alias CommandType "filter_scan_list"|"evaluate"|"authenticate"|"present_ui"|"maintain"|"logoff"

---A network the device sees or has joined.
---@class Network
---@field ssid string
---@field bssid string
---@field signal_strength number 0.0 to 1.0
---@field is_secure boolean
---@field did_auto_join boolean
---@field did_just_join boolean
---@field is_chosen_helper boolean
local Network = {}

---How sure this helper is that it handles the network (evaluate, filter_scan_list).
---@param level Confidence
function Network:set_confidence(level) end

---The network's WPA password, supplied from the scan list (filter_scan_list).
---@param password string
function Network:set_password(password) end

---A response being built; `deliver()` sends it, once.
---@class Response
local Response = {}

---@param network Network a network from `cmd.network` or `cmd.network_list`
function Response:set_network(network) end

---@param networks Network[] networks from `cmd.network_list`
function Response:set_network_list(networks) end

function Response:deliver() end

---@class HTTPRedirect
---@field status integer
---@field url string

---@class HTTPResponse
---@field status integer
---@field headers table<string, string|string[]> lower-case names; `set-cookie` is a list
---@field body string
---@field url string the final URL
---@field redirects HTTPRedirect[]

---@class HTTPOptions
---@field url string
---@field method? string default "GET", or "POST" when a body is given
---@field headers? table<string, string>
---@field body? string
---@field form? table<string, string|number|boolean|(string|number|boolean)[]>|[string, string|number|boolean][] names sorted, or `{ name, value }` pairs in their order; the query of a GET or HEAD, else an urlencoded body
---@field json? any
---@field timeout? number seconds (default 10)
---@field follow_redirects? boolean default true
---@field max_redirects? integer default 10
---@field max_body? integer bytes after decompression (default 1048576)

---@class ProbeVerdict
---@field state "connected"|"captive"|"partial"|"connected_without_internet"|"not_connected"|"determining"
---@field portal_url? string where to log in, when captive
---@field portal_url_source? "location"|"wispr"|"capport"
---@field interface_kind? "wifi"|"ethernet"|"cellular"|"loopback"|"virtual"
---@field details string[] one line per probe that answered

---What a handler receives.
---@class Command
---@field type CommandType
---@field network? Network
---@field network_list? Network[] the scan list (filter_scan_list)
---@field store table<string, string> kept per helper and network across restarts (16 KiB); keys starting with "@" are the runtime's (read-only)
---@field answers? table<string, string> what the person entered (present_ui), checked against the questions
local Command = {}

---@param result CommandResult
---@return Response
function Command:create_response(result) end

---An HTTP request over the command's network. Failure messages start with
---`timeout`, `dns`, `connect`, `tls`, `too_large`, `not_allowed`, `redirect_loop` or `protocol`.
---@param options HTTPOptions
---@return HTTPResponse? response
---@return string? problem
function Command:http(options) end

---@class SubmitOptions
---@field values? table<string, string|number|boolean|(string|number|boolean)[]> what the person enters, by field name: text, `true`/`false` to tick a box, a radio's or option's value; names no field has are added at the end
---@field button? FormField|string|false the submit button clicked (a field of the form, or its name, value or label); false for none; default the first enabled one
---@field timeout? number
---@field follow_redirects? boolean
---@field max_redirects? integer
---@field max_body? integer

---A form of `html.forms` submitted as a browser submits it (`html.submission`), over
---`cmd:http`. A generic helper ("@portal") may send it where a page it read sends it.
---@param form Form
---@param options? SubmitOptions
---@return HTTPResponse? response
---@return string? problem
function Command:submit(form, options) end

---The network's connectivity verdict, as soon as it is certain.
---@return ProbeVerdict
function Command:probe() end

---@class SocketOptions
---@field timeout? number seconds each operation may take at most (default 10)

---A TCP connection from `cmd:tcp`; closed at the latest when the handler returns.
---@class TCPConnection
local TCPConnection = {}

---Sends all of `data`.
---@param data string
---@return integer? sent
---@return string? problem
function TCPConnection:send(data) end

---`"*l"` (or nothing): a line without its end; `n`: exactly n bytes (fewer only at the end
---of the stream); `"*a"`: everything until the peer closes (at most 1 MiB).
---@param amount? "*l"|"*a"|integer
---@return string? received
---@return string? problem
function TCPConnection:receive(amount) end

---Closes the connection; closing twice is harmless.
function TCPConnection:close() end

---A UDP session from `cmd:udp`; closed at the latest when the handler returns.
---@class UDPSession
local UDPSession = {}

---Sends one datagram (at most 65507 bytes).
---@param data string
---@return integer? sent
---@return string? problem
function UDPSession:send(data) end

---The next datagram, waiting at most `timeout` seconds (the session's timeout by default).
---@param timeout? number
---@return string? datagram
---@return string? problem
function UDPSession:receive(timeout) end

---Closes the session; closing twice is harmless.
function UDPSession:close() end

---A TCP connection over the command's network. Failure messages start with `timeout`,
---`dns`, `connect`, `not_allowed`, `too_large`, `protocol` or `closed`.
---@param host string a name in the script's `hosts`, or an address
---@param port integer
---@param options? SocketOptions
---@return TCPConnection? connection
---@return string? problem
function Command:tcp(host, port, options) end

---A UDP session over the command's network; failures as for `Command:tcp`.
---@param host string
---@param port integer
---@param options? SocketOptions
---@return UDPSession? session
---@return string? problem
function Command:udp(host, port, options) end

---A venue credential from this helper's section of the secrets file, or the network's ([helper "SSID"]).
---Refused in evaluate, and in filter_scan_list but for "wifi_password" (docs/SCRIPTING.md, "What each command may do").
---@param name string
---@return string
function Command:secret(name) end

---Whether cmd:secret(name) would answer, once the command may read secrets: what evaluate,
---which reads none, may know of them.
---@param name string
---@return boolean
function Command:has_secret(name) end

---A question for the person (docs/SCRIPTING.md, "Asking the person").
---@class QuestionField
---@field name string the key in cmd.answers
---@field label string what the person reads
---@field kind? "text"|"email"|"number"|"password"|"checkbox"|"choice" text unless given
---@field required? boolean true unless given false; a required checkbox must be checked
---@field options? (string|{ value: string, label: string })[] for a choice
---@field pattern? string a regular expression the whole answer must match

---What a helper asks a person when it answers ui_required.
---@class Questions
---@field title string
---@field message? string
---@field fields QuestionField[] 1 to 20

---The networks a helper handles: a match chooses it without running evaluate.
---@class NetworkDeclaration
---@field ssids? string[] exact SSIDs: high confidence
---@field ssid_patterns? string[] globs (`*`, `?`) with at least one other character: low confidence
---@field bssid_prefixes? string[] "02:5e:10": narrow the other entries to these access points; alone, any SSID there (low)
---@field portal_hosts? string[] the host the join's probe finds the portal at, when no SSID entry matched: a host (high) or "*.domain" (low)
---@field gateway_families? ("coovachilli"|"meraki"|"unifi"|"aruba"|"opennds"|"pfsense")[] a gateway by its probe redirect's shape: low confidence

---What a venue script returns.
---@class VenueScript
---@field name string display name, at most 15 characters
---@field hosts string[] the only hosts it may reach: names, addresses, "*.domain", or "@portal" (what the network names as its portal)
---@field ui? Questions what to ask a person when authenticate answers ui_required (or return "ui_required", questions)
---@field networks? NetworkDeclaration the networks it handles; a script with them has no evaluate
---@field filter_scan_list? fun(cmd: Command): CommandResult|Response|nil
---@field evaluate? fun(cmd: Command): Confidence|CommandResult|Response|nil
---@field authenticate? fun(cmd: Command): CommandResult|Response|nil, Questions?
---@field present_ui? fun(cmd: Command): CommandResult|Response|nil
---@field maintain? fun(cmd: Command): CommandResult|Response|nil
---@field logoff? fun(cmd: Command): CommandResult|Response|nil

---Waits; counts against the command's deadline.
---@param seconds number
function sleep(seconds) end

time = {}
---@return number seconds since the epoch
function time.now() end

log = {}
---@param ... any
function log.debug(...) end
---@param ... any
function log.info(...) end
---@param ... any
function log.warn(...) end
---@param ... any
function log.error(...) end

json = {}
---@param value any
---@return string
function json.encode(value) end
---@param text string
---@return any
function json.decode(text) end

url = {}
---@param text string
---@return string
function url.encode(text) end
---@param text string
---@return string
function url.decode(text) end
---@class ParsedURL
---@field scheme? string
---@field user? string
---@field password? string
---@field host? string
---@field port? integer
---@field path string
---@field query? string
---@field fragment? string
---@param text string
---@return ParsedURL
function url.parse(text) end
---@param base string
---@param reference string
---@return string
function url.resolve(base, reference) end
---Names sorted, so the same table gives the same text; `{ name, value }` pairs keep their order.
---@param fields table<string, string|number|boolean|(string|number|boolean)[]>|[string, string|number|boolean][]
---@return string
function url.query(fields) end

base64 = {}
---@param bytes string
---@return string
function base64.encode(bytes) end
---@param text string
---@return string
function base64.decode(text) end

---@class FormField
---@field name? string
---@field type string
---@field value string
---@field checked? boolean
---@field disabled? boolean
---@field label? string a `<button>`'s text
---@field multiple? boolean a `<select multiple>`
---@field selected? string[] the values a `<select multiple>` sends
---@field formaction? string a submit button's own action, absolute
---@field formmethod? "get"|"post"
---@field formenctype? "multipart/form-data"|"text/plain"

---@class Form
---@field action string absolute
---@field method "get"|"post"
---@field enctype? "multipart/form-data"|"text/plain" nil for urlencoded
---@field id? string
---@field name? string
---@field fields FormField[]

---@class SubmissionRequest: HTTPOptions
---@field method "GET"|"POST"
---@field url string
---@field body? string
---@field headers? table<string, string>

---@class Link
---@field url string absolute
---@field text string

html = {}
---@param page string
---@param base_url string
---@return Form[]
function html.forms(page, base_url) end
---What a browser sends when the form is submitted: options for `cmd:http`.
---@param form Form
---@param options? SubmitOptions
---@return SubmissionRequest
function html.submission(form, options) end
---The page's links to other pages (not its own fragments, not `javascript:`), in document order.
---@param page string
---@param base_url string
---@return Link[]
function html.links(page, base_url) end
---@param page string
---@return string
function html.text(page) end
---@param page string
---@param base_url? string
---@return { delay: number, url: string? }?
function html.meta_refresh(page, base_url) end

---The generic path through a splash page, as click-through.lua and capport.lua take it.
splash = {}
---The form of a page to go on with, and the button a person clicks (false: none, sent as
---when they press Enter); nil when the page has none.
---@param page HTTPResponse
---@return Form? form
---@return FormField|false|nil button
function splash.form(page) end
---Follows the portal from `page`, a step at a time (at most 6), until the probe says
---connected: "success"; "ui_required" and the questions for the person; "failure" or
---"temporary_failure" and why.
---@param cmd Command
---@param page HTTPResponse
---@param answers? table<string, string> the person's answers, by field name (present_ui): then a page that asks for more is a "temporary_failure"
---@return CommandResult result
---@return table|string|nil detail
function splash.follow(cmd, page, answers) end

---What the family helpers share: a portal's redirect's fields, the person's or the secrets' credentials.
family = {}
---The fields of `address`'s query, decoded (`+` as a space); the last of a repeated name.
---@param address string
---@return table<string, string>
function family.query(address) end
---The values of `names` (default `{ "username", "password" }`), by name: from `answers` when
---given (present_ui), else from the network's secrets; nil unless each is there and not empty.
---@param cmd Command
---@param answers? table<string, string>
---@param names? string[]
---@return table<string, string>?
function family.credentials(cmd, answers, names) end
---The questions for a username and password ("Wi-Fi login", `username`, `password`), for `ui` or `ui_required`.
---@param message string
---@return table
function family.login_questions(message) end

crypto = {}
---@param data string
---@param format? "raw"
---@return string
function crypto.md5(data, format) end
---@param data string
---@param format? "raw"
---@return string
function crypto.sha1(data, format) end
---@param data string
---@param format? "raw"
---@return string
function crypto.sha256(data, format) end
---@param key string
---@param message string
---@param format? "raw"
---@return string
function crypto.hmac_sha256(key, message, format) end

---A WISPr message (WISPAccessGatewayParam) as `wispr.parse` reads it.
---@class WISPrMessage
---@field message "redirect"|"proxy"|"authentication_reply"|"authentication_poll_reply"|"logoff_reply"|"abort_login_reply"|"unknown"
---@field message_type? integer
---@field response_code? integer 0, 50 login succeeded, 100 login failed, 150 logoff succeeded, 200 proxy, 201 pending, ...
---@field access_procedure? string
---@field access_location? string
---@field location_name? string
---@field login_url? string
---@field abort_login_url? string
---@field next_url? string
---@field delay? integer
---@field logoff_url? string
---@field login_results_url? string
---@field reply_message? string
---@field elements table<string, string> every element by its original name

wispr = {}
---@param page string
---@return WISPrMessage? message nil when the page carries none
---@return string? problem when the XML is broken beyond repair
function wispr.parse(page) end
---@param message WISPrMessage a Redirect, with `login_url`
---@param username string
---@param password string
---@param originating_server? string
---@return table<string, string> form fields for cmd:http{ form = ... }
function wispr.login_form(message, username, password, originating_server) end

---What `wispr.login`, `wispr.logoff` and `wispr.abort` answer.
---@class WISPrOutcome
---@field result "success"|"login_failed"|"radius_error"|"network_admin_error"|"gateway_error"|"protocol_error"|"pending"|"aborted"|"not_wispr"|"unreachable"|"not_logged_in"|"no_login_pending"
---@field response_code? integer the gateway's ResponseCode
---@field reply? string the gateway's ReplyMessage, or what went wrong
---@field logoff_url? string after a successful login
---@field message? WISPrMessage the gateway's last message

---@class WISPrLogin
---@field username string
---@field password string
---@field url? string where to look for the Redirect (default: the probe's portal URL)
---@field originating_server? string
---@field wait? number the most seconds to wait for a pending login (default: the command's deadline)

---The WISPr smart-client login: Redirect, optional Proxy, the login POST, a pending login
---polled; keeps the LogoffURL (and the AbortLoginURL) for later commands.
---@param cmd Command
---@param login WISPrLogin
---@return WISPrOutcome
function wispr.login(cmd, login) end

---Logs off through the LogoffURL an earlier `wispr.login` kept.
---@param cmd Command
---@return WISPrOutcome
function wispr.logoff(cmd) end

---Aborts a pending login through its AbortLoginURL.
---@param cmd Command
---@return WISPrOutcome
function wispr.abort(cmd) end

---What the network's RFC 8908 Captive Portal API says.
---@class CaptivePortalStatus
---@field api_url string
---@field captive boolean
---@field unrestricted? boolean the API URI is urn:ietf:params:capport:unrestricted (no portal)
---@field user_portal_url? string
---@field venue_info_url? string
---@field can_extend_session? boolean
---@field seconds_remaining? number
---@field bytes_remaining? number

capport = {}
---The network's Captive Portal API: its status, nil when the network has none, or nil and a
---message prefixed as cmd:http's are.
---@param cmd Command
---@return CaptivePortalStatus? status
---@return string? problem
function capport.fetch(cmd) end
