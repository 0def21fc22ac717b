import LuaSandbox
import Testing

/// `html.submission`: what a browser sends when a person submits a form of `html.forms`.
extension ScriptLibraryTests {
    /// The request for the first form of `page`, given `options` (Lua), as `method url body content-type`.
    func submission(_ page: String, base: String = "http://gw.example:2050/opennds_preauth/?fas=x",
                    _ options: String = "nil", form: Int = 1) throws -> [LuaValue] {
        try run("""
            local request = html.submission(html.forms([==[\(page)]==], '\(base)')[\(form)], \(options))
            return request.method, request.url, request.body, request.headers and request.headers["Content-Type"]
            """)
    }

    /// openNDS's splash: its fields in document order (openNDS answers 511 when `continue`
    /// comes first, as url.query sorts it), replacing the action's own query.
    @Test func aGetFormSendsItsFieldsInDocumentOrderAsTheQuery() throws {
        let page = """
            <form action="/opennds_preauth/?stale=1#top" method="get">
            <input type="hidden" name="fas" value="a b+c/=">
            <input type="hidden" name="continue" value="clicked">
            <input type="submit" value="Accept Terms of Service">
            </form>
            """
        #expect(try submission(page) == ["GET", "http://gw.example:2050/opennds_preauth/?fas=a+b%2Bc%2F%3D&continue=clicked", nil, nil])
        // url.query sorts the names; a list of pairs keeps its order.
        #expect(try run("return url.query({ fas = 'f', continue = 'clicked' }), url.query({ { 'fas', 'f' }, { 'continue', 'clicked' } })")
            == ["continue=clicked&fas=f", "fas=f&continue=clicked"])
    }

    /// Only the clicked button is sent: the first enabled one by default (Enter), or the one
    /// named by its field, name, value or label; an image button sends where it was clicked.
    @Test func onlyTheClickedButtonIsSentAndAnImageButtonSendsItsCoordinates() throws {
        let page = """
            <form action=/go method=post>
            <input type=hidden name=t value=1>
            <button name=choice value=no disabled>Disabled</button>
            <button name=choice value=decline>I disagree</button>
            <input type=image name=accept src=ok.png>
            <button>Plain</button>
            <input type=image src=go.png>
            </form>
            """
        let contentType: LuaValue = "application/x-www-form-urlencoded"
        let url: LuaValue = "http://gw.example:2050/go"
        #expect(try submission(page) == ["POST", url, "t=1&choice=decline", contentType])
        #expect(try submission(page, "{ button = 'accept' }") == ["POST", url, "t=1&accept.x=0&accept.y=0", contentType])
        #expect(try submission(page, "{ button = 'Plain' }") == ["POST", url, "t=1", contentType])
        #expect(try submission(page, "{ button = false }") == ["POST", url, "t=1", contentType])
        #expect(try run("""
            local form = html.forms([==[\(page)]==], 'http://gw.example/')[1]
            return html.submission(form, { button = form.fields[6] }).body
            """) == ["t=1&x=0&y=0"])
        #expect(error("return html.submission(html.forms([==[\(page)]==], 'http://a/')[1], { button = 'no' })")?
            .contains("bad argument #2 to 'html.submission' (the form has no enabled submit button named no)") == true)
    }

    /// Checked boxes and radios only, the selected options, no disabled control, a textarea's
    /// line breaks as CR LF; `values` fills fields in, ticks boxes, picks radios, and adds
    /// what no field has at the end.
    @Test func aPostFormSendsWhatABrowserSends() throws {
        let page = """
            <base href="https://portal.example/app/">
            <form action="login?x=1" method=POST>
            <input name=email>
            <input type=checkbox name=terms value=yes>
            <input type=checkbox name=news checked>
            <input type=radio name=plan value=free checked><input type=radio name=plan value=day>
            <select name=room><option>101<option selected>102</select>
            <select name=extras multiple><option selected>tv<option>bar<option selected value=spa>Spa</select>
            <textarea name=note>a\nb</textarea>
            <input name=token value=t disabled>
            <input type=submit name=go value="Log in">
            </form>
            """
        #expect(try submission(page) == [
            "POST", "https://portal.example/app/login?x=1",
            "email=&news=on&plan=free&room=102&extras=tv&extras=spa&note=a%0D%0Ab&go=Log+in", "application/x-www-form-urlencoded",
        ])
        #expect(try submission(page, "{ values = { email = 'me@example.org', terms = true, news = false, plan = 'day', zz = 1, aa = 'x' } }")[2]
            == "email=me%40example.org&terms=yes&plan=day&room=102&extras=tv&extras=spa&note=a%0D%0Ab&go=Log+in&aa=x&zz=1")
    }

    /// `enctype="multipart/form-data"`: each field a part, a file input an empty file.
    @Test func aMultipartFormSendsParts() throws {
        let page = """
            <form action=/up method=post enctype="Multipart/Form-Data">
            <input name='a"b' value="1 2"><input type=file name=f><input type=submit value=Send>
            </form>
            """
        let answer = try submission(page)
        let contentType = try #require(answer[3].stringValue)
        #expect(contentType.hasPrefix("multipart/form-data; boundary=----hotspot-helper-"))
        let boundary = String(contentType.dropFirst("multipart/form-data; boundary=".count))
        #expect(answer[2].stringValue == """
            --\(boundary)\r
            Content-Disposition: form-data; name="a%22b"\r
            \r
            1 2\r
            --\(boundary)\r
            Content-Disposition: form-data; name="f"; filename=""\r
            Content-Type: application/octet-stream\r
            \r
            \r
            --\(boundary)--\r

            """)
    }

    /// A button's `formaction` and `formmethod` count when it is the one clicked.
    @Test func theClickedButtonsFormActionAndMethodCount() throws {
        let page = """
            <form action=/a method=post><input name=n value=v>
            <button>Post</button><button formaction="/b?q=1" formmethod=get name=b value=1>Get</button></form>
            """
        #expect(try submission(page, base: "http://p.example/") == ["POST", "http://p.example/a", "n=v", "application/x-www-form-urlencoded"])
        #expect(try submission(page, base: "http://p.example/", "{ button = 'Get' }") == ["GET", "http://p.example/b?n=v&b=1", nil, nil])
    }

    @Test func linksAreListedResolved() throws {
        let page = """
            <base href="http://gw.example/dir/"><a href="#top">Top</a><a href="javascript:go()">Go</a>
            <a href="next?a=1"> Go <b>on</b></a><a>no href</a>
            """
        #expect(try run("return html.links([==[\(page)]==], 'http://gw.example/')") == [[["url": "http://gw.example/dir/next?a=1", "text": "Go on"]]])
    }
}
