import LuaSandbox
import Testing

/// `wispr`, called from sandboxed Lua on the pages WISPr gateways serve.
extension ScriptLibraryTests {
    func wispr(_ page: String) throws -> [LuaValue] {
        try run("return wispr.parse([==[\(page)]==])")
    }

    /// The well-known fields of the parsed page, without `elements`.
    func wisprFields(_ page: String) throws -> [LuaValue] {
        try run("local message = wispr.parse([==[\(page)]==]) message.elements = nil return message")
    }

    /// A page as the portal simulator's `WISPrPortal` serves one, `message` in a comment.
    func simulatorPage(_ message: String) -> String {
        """
        <!DOCTYPE html>
        <html>
        <head><meta charset="utf-8"><title>Aroma Cafe</title></head>
        <body>
        <!--
        <WISPAccessGatewayParam xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" \
        xsi:noNamespaceSchemaLocation="http://www.acmewisp.com/WISPAccessGatewayParam.xsd">
        \(message)
        </WISPAccessGatewayParam>
        -->

        </body>
        </html>

        """
    }

    static let simulatorRedirect = """
        <Redirect>
        <AccessProcedure>1.0</AccessProcedure>
        <AccessLocation>aroma-cafe-01</AccessLocation>
        <LocationName>Aroma Cafe</LocationName>
        <LoginURL>http://127.0.0.1:8080/wispr/login</LoginURL>
        <AbortLoginURL>http://127.0.0.1:8080/wispr/abort</AbortLoginURL>
        <MessageType>100</MessageType>
        <ResponseCode>0</ResponseCode>
        </Redirect>
        """

    @Test func simulatorRedirect() throws {
        #expect(try wispr(simulatorPage(Self.simulatorRedirect)) == [[
            "message": "redirect", "message_type": 100, "response_code": 0, "access_procedure": "1.0",
            "access_location": "aroma-cafe-01", "location_name": "Aroma Cafe",
            "login_url": "http://127.0.0.1:8080/wispr/login", "abort_login_url": "http://127.0.0.1:8080/wispr/abort",
            "elements": [
                "AccessProcedure": "1.0", "AccessLocation": "aroma-cafe-01", "LocationName": "Aroma Cafe",
                "LoginURL": "http://127.0.0.1:8080/wispr/login", "AbortLoginURL": "http://127.0.0.1:8080/wispr/abort",
                "MessageType": "100", "ResponseCode": "0",
            ],
        ]])
    }

    /// Every other message the simulator sends.
    @Test(arguments: [
        (
            "<Proxy>\n<MessageType>110</MessageType>\n<ResponseCode>200</ResponseCode>\n<NextURL>http://127.0.0.1:8080/wispr/proxy</NextURL>\n<Delay>0</Delay>\n</Proxy>",
            ["message": "proxy", "message_type": 110, "response_code": 200, "next_url": "http://127.0.0.1:8080/wispr/proxy", "delay": 0]
        ),
        (
            "<AuthenticationReply>\n<MessageType>120</MessageType>\n<ResponseCode>50</ResponseCode>\n<ReplyMessage>Welcome to Aroma Cafe</ReplyMessage>\n<LogoffURL>http://127.0.0.1:8080/wispr/logoff</LogoffURL>\n</AuthenticationReply>",
            [
                "message": "authentication_reply", "message_type": 120, "response_code": 50,
                "reply_message": "Welcome to Aroma Cafe", "logoff_url": "http://127.0.0.1:8080/wispr/logoff",
            ]
        ),
        (
            "<AuthenticationReply>\n<MessageType>120</MessageType>\n<ResponseCode>100</ResponseCode>\n<ReplyMessage>Invalid username or password</ReplyMessage>\n</AuthenticationReply>",
            ["message": "authentication_reply", "message_type": 120, "response_code": 100, "reply_message": "Invalid username or password"]
        ),
        (
            "<AuthenticationReply>\n<MessageType>120</MessageType>\n<ResponseCode>201</ResponseCode>\n<LoginResultsURL>http://127.0.0.1:8080/wispr/results</LoginResultsURL>\n<Delay>3</Delay>\n</AuthenticationReply>",
            [
                "message": "authentication_reply", "message_type": 120, "response_code": 201,
                "login_results_url": "http://127.0.0.1:8080/wispr/results", "delay": 3,
            ]
        ),
        (
            "<AuthenticationPollReply>\n<MessageType>140</MessageType>\n<ResponseCode>201</ResponseCode>\n<LoginResultsURL>http://127.0.0.1:8080/wispr/results</LoginResultsURL>\n<Delay>2</Delay>\n</AuthenticationPollReply>",
            [
                "message": "authentication_poll_reply", "message_type": 140, "response_code": 201,
                "login_results_url": "http://127.0.0.1:8080/wispr/results", "delay": 2,
            ]
        ),
        (
            "<AuthenticationPollReply>\n<MessageType>140</MessageType>\n<ResponseCode>50</ResponseCode>\n<ReplyMessage>Welcome to Aroma Cafe</ReplyMessage>\n<LogoffURL>http://127.0.0.1:8080/wispr/logoff</LogoffURL>\n</AuthenticationPollReply>",
            [
                "message": "authentication_poll_reply", "message_type": 140, "response_code": 50,
                "reply_message": "Welcome to Aroma Cafe", "logoff_url": "http://127.0.0.1:8080/wispr/logoff",
            ]
        ),
        (
            "<AuthenticationPollReply>\n<MessageType>140</MessageType>\n<ResponseCode>100</ResponseCode>\n<ReplyMessage>No login in progress</ReplyMessage>\n</AuthenticationPollReply>",
            ["message": "authentication_poll_reply", "message_type": 140, "response_code": 100, "reply_message": "No login in progress"]
        ),
        (
            "<LogoffReply>\n<MessageType>130</MessageType>\n<ResponseCode>150</ResponseCode>\n</LogoffReply>",
            ["message": "logoff_reply", "message_type": 130, "response_code": 150]
        ),
        (
            "<AbortLoginReply>\n<MessageType>150</MessageType>\n<ResponseCode>151</ResponseCode>\n</AbortLoginReply>",
            ["message": "abort_login_reply", "message_type": 150, "response_code": 151]
        ),
    ] as [(String, LuaValue)])
    func simulatorMessages(_ message: String, _ expected: LuaValue) throws {
        #expect(try wisprFields(simulatorPage(message)) == [expected])
    }

    @Test func wispr2ElementsAndUnknownMessagesComeThrough() throws {
        let page = """
            <!--<WISPAccessGatewayParam>
              <EAPAuthenticationReply>
                <VersionLow>2.0</VersionLow><VersionHigh>2.0</VersionHigh>
                <MessageType>121</MessageType><ResponseCode>10</ResponseCode>
                <EAPMsg>AgEABQE=</EAPMsg><MaxSessionTime>3600</MaxSessionTime>
              </EAPAuthenticationReply>
            </WISPAccessGatewayParam>-->
            """
        #expect(try wispr(page) == [[
            "message": "unknown", "message_type": 121, "response_code": 10,
            "elements": [
                "VersionLow": "2.0", "VersionHigh": "2.0", "MessageType": "121", "ResponseCode": "10", "EAPMsg": "AgEABQE=",
                "MaxSessionTime": "3600",
            ],
        ]])
        #expect(try wisprFields("<!-- <WISPAccessGatewayParam><Redirect><LoginURL>/l</LoginURL></Redirect></WISPAccessGatewayParam> -->")
            == [["message": "unknown", "login_url": "/l"]])
    }

    /// Gateways in the wild: white space, letter case, namespaces, declarations, CDATA, junk.
    @Test(arguments: [
        // Extra white space in and around the comment and the values; the usual upper-case HTML.
        """
        <HTML><BODY>
        <!--     \t
              <WISPAccessGatewayParam
                  xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance">
                <Redirect>
                  <MessageType>
                    100
                  </MessageType>
                  <LoginURL>
                    https://gw.example/login?mac=aa
                  </LoginURL>
                </Redirect>
              </WISPAccessGatewayParam>

        -->
        </BODY></HTML>
        """,
        // The wrapper in other letter cases, the closing tag not matching the opening one.
        "<!--<WISPACCESSGATEWAYPARAM><Redirect><MessageType>100</MessageType><LoginURL>https://gw.example/login?mac=aa</LoginURL></Redirect></WISPACCESSGATEWAYPARAM>-->",
        "<!--<wispaccessgatewayparam><Redirect><MessageType>100</MessageType><LoginURL>https://gw.example/login?mac=aa</LoginURL></Redirect></WISPAccessGatewayParam>-->",
        // The whole document, with a declaration and namespace attributes, or neither.
        """
        <?xml version="1.0" encoding="UTF-8"?>
        <WISPAccessGatewayParam xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" xsi:noNamespaceSchemaLocation="http://www.acmewisp.com/WISPAccessGatewayParam.xsd"><Redirect><MessageType>100</MessageType><LoginURL>https://gw.example/login?mac=aa</LoginURL></Redirect></WISPAccessGatewayParam>
        """,
        "<WISPAccessGatewayParam><Redirect><MessageType>100</MessageType><LoginURL>https://gw.example/login?mac=aa</LoginURL></Redirect></WISPAccessGatewayParam>",
        // CDATA, and escaped or bare ampersands.
        "<!--<WISPAccessGatewayParam><Redirect><MessageType><![CDATA[100]]></MessageType><LoginURL><![CDATA[https://gw.example/login?mac=aa]]></LoginURL></Redirect></WISPAccessGatewayParam>-->",
        // Junk around it, no comment at all, a field-name case the standard does not use.
        "garbage <p>text</p> <WISPAccessGatewayParam><Redirect><messagetype>100</messagetype><LoginUrl>https://gw.example/login?mac=aa</LoginUrl></Redirect></WISPAccessGatewayParam> trailing <b>junk & more",
        // Two comments, only the second one WISPr.
        "<!-- generated by portal 3.1 <b>bold</b> --><p>Hi</p><!-- <WISPAccessGatewayParam><Redirect><MessageType>100</MessageType><LoginURL>https://gw.example/login?mac=aa</LoginURL></Redirect></WISPAccessGatewayParam> -->",
        // Fields right in the envelope, with no message element.
        "<!--<WISPAccessGatewayParam><MessageType>100</MessageType><LoginURL>https://gw.example/login?mac=aa</LoginURL></WISPAccessGatewayParam>-->",
    ])
    func realWorldVariants(_ page: String) throws {
        #expect(try run("local m = wispr.parse([==[\(page)]==]) return m.message, m.message_type, m.login_url")
            == ["redirect", 100, "https://gw.example/login?mac=aa"])
    }

    @Test func ampersandsAndCharacterReferences() throws {
        let page = """
            <!--<WISPAccessGatewayParam><Redirect><MessageType>100</MessageType>
            <LoginURL>https://gw.example/login?a=1&b=2&amp;c=3&copy=4&#38;d=&#x35;&</LoginURL>
            <LocationName><![CDATA[Fish & Chips &amp; <Co>]]> &lt;Pier&gt; &quot;3&apos;</LocationName>
            </Redirect></WISPAccessGatewayParam>-->
            """
        #expect(try run("local m = wispr.parse([==[\(page)]==]) return m.login_url, m.location_name") == [
            "https://gw.example/login?a=1&b=2&c=3&copy=4&d=5&", "Fish & Chips &amp; <Co> <Pier> \"3'",
        ])
    }

    @Test func theDeclaredEncodingIsHonoured() throws {
        // "Café" in ISO-8859-1: the declaration is kept though the envelope is cut from the page.
        let page = #"<?xml version="1.0" encoding="ISO-8859-1"?><WISPAccessGatewayParam><Redirect><MessageType>100</MessageType><LocationName>Caf\xE9</LocationName></Redirect></WISPAccessGatewayParam>"#
        #expect(try run("return wispr.parse('\(page)').location_name") == ["Café"])
    }

    @Test func entitiesAreNeverExpanded() async throws {
        let laughs = (1...9).map { level in
            "<!ENTITY lol\(level) \"" + String(repeating: "&lol\(level - 1);", count: 10) + "\">"
        }.joined(separator: "\n")
        let page = """
            <?xml version="1.0"?>
            <!DOCTYPE WISPAccessGatewayParam [
            <!ENTITY lol0 "lol">
            \(laughs)
            <!ENTITY passwd SYSTEM "file:///etc/passwd">
            <!ENTITY remote SYSTEM "http://127.0.0.1:9/evil.dtd">
            ]>
            <WISPAccessGatewayParam><Redirect><MessageType>100</MessageType>
            <LocationName>&lol9;</LocationName><LoginURL>&passwd;</LoginURL><ReplyMessage>&remote;</ReplyMessage>
            </Redirect></WISPAccessGatewayParam>
            """
        let (result, duration) = try await timed("local m = wispr.parse([==[\(page)]==]) return m.location_name, m.login_url, m.reply_message")
        #expect(result == ["&lol9;", "&passwd;", "&remote;"])
        #expect(duration < .seconds(3))
    }

    @Test func noMessageIsNil() throws {
        #expect(try run("return select('#', wispr.parse('<html><body><!-- nothing --><p>Welcome</p></body></html>'))") == [1])
        #expect(try run("return wispr.parse(''), wispr.parse('<WISPAccessGatewayParamX/>')") == [nil, nil])
    }

    @Test(arguments: [
        "<!-- <WISPAccessGatewayParam> -->",
        "<WISPAccessGatewayParam",
        "<!--<WISPAccessGatewayParam><Redirect><MessageType 100</MessageType></Redirect></WISPAccessGatewayParam>-->",
        "<!--<WISPAccessGatewayParam <Redirect><MessageType>100</MessageType></Redirect></WISPAccessGatewayParam>-->",
        "<WISPAccessGatewayParam/> trailing <b>junk</b>",
    ])
    func malformedMessagesAreNilWithAReason(_ page: String) throws {
        let result = try wispr(page)
        #expect(result.count == 2)
        #expect(result.first == .nil)
        let reason = result.last?.stringValue ?? ""
        #expect(reason.hasPrefix("wispr.parse: the WISPAccessGatewayParam is not well-formed XML ("), "\(reason)")
    }

    @Test func brokenButReadableMessagesAreRecovered() throws {
        // Unclosed elements and a missing envelope end: what libxml2 recovers is kept.
        #expect(try wisprFields("<!--<WISPAccessGatewayParam><Redirect><MessageType>100</MessageType><LoginURL>https://gw.example/l</Redirect>-->")
            == [["message": "redirect", "message_type": 100, "login_url": "https://gw.example/l"]])
        #expect(try wisprFields("<WISPAccessGatewayParam><AuthenticationReply><MessageType>120<ResponseCode>50</ResponseCode>")
            == [["message": "authentication_reply", "message_type": 120, "response_code": 50]])
        #expect(try wisprFields("<!--<WISPAccessGatewayParam><Redirect><MessageType>1x0</MessageType><Delay>soon</Delay></Redirect></WISPAccessGatewayParam>-->")
            == [["message": "unknown"]])
    }

    @Test func wisprPagesAreBounded() throws {
        let message = "<!--<WISPAccessGatewayParam><Redirect><MessageType>100</MessageType></Redirect></WISPAccessGatewayParam>-->"
        #expect(error("return wispr.parse(('x'):rep(1024 * 1024 + 1))") == "wispr.parse: the page is larger than 1 MiB")
        #expect(try run("return wispr.parse(('x'):rep(1024 * 1024 - \(message.utf8.count)) .. '\(message)').message_type") == [100])
        let manyElements = "'<WISPAccessGatewayParam><R>' .. (function() local t = {} for i = 1, 1000 do t[i] = '<E' .. i .. '>x</E' .. i .. '>' end return table.concat(t) end)() .. '</R></WISPAccessGatewayParam>'"
        #expect(try run("local n = 0 for _ in pairs(wispr.parse(\(manyElements)).elements) do n = n + 1 end return n") == [256])
    }

    @Test(.serialized, arguments: [  // one at a time, each on a thread of its own
        "return wispr.parse('<WISPAccessGatewayParam><R><LoginURL>' .. ('&'):rep(500000) .. '</LoginURL></R></WISPAccessGatewayParam>')",
        "return wispr.parse('<WISPAccessGatewayParam>' .. ('<a>'):rep(100000))",
        "return wispr.parse(('<!-- <WISPAccessGatewayParamX> -->'):rep(30000))",
        "return wispr.parse('<WISPAccessGatewayParam><R>' .. ('<![CDATA['):rep(100000))",
    ])
    func pathologicalMessagesFinishPromptly(_ body: String) async throws {
        #expect(try await timed(body).duration < .seconds(3))
    }

    @Test func loginForm() throws {
        let parse = "local m = wispr.parse([==[\(simulatorPage(Self.simulatorRedirect))]==])"
        #expect(try run("\(parse) return wispr.login_form(m, 'guest', 'aroma 2026')") == [[
            "UserName": "guest", "Password": "aroma 2026", "button": "Login", "FNAME": "0",
            "OriginatingServer": "http://www.apple.com",
        ]])
        #expect(try run("\(parse) return wispr.login_form(m, 'u', 'p', 'http://example.com/news').OriginatingServer")
            == ["http://example.com/news"])
        #expect(error("return wispr.login_form({ message = 'logoff_reply' }, 'u', 'p')")
            == "wispr.login_form: the message has no login_url (a Redirect carries it)")
    }

    @Test func wisprBadArgumentsAreLuaErrors() {
        #expect(error("return wispr.parse()") == "bad argument #1 to 'wispr.parse' (string expected, got nil)")
        #expect(error("return wispr.parse({})") == "bad argument #1 to 'wispr.parse' (string expected, got table)")
        #expect(error("return wispr.login_form('x', 'u', 'p')") == "bad argument #1 to 'wispr.login_form' (table expected, got string)")
        #expect(error("return wispr.login_form({ login_url = 'http://a/' }, 'u')")
            == "bad argument #3 to 'wispr.login_form' (string expected, got nil)")
        #expect(error("return wispr.login_form({ login_url = 'http://a/' }, 'u', 'p', 5)")
            == "bad argument #4 to 'wispr.login_form' (string expected, got number)")
    }
}
