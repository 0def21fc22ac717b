/// The documents of the `hostile` scenario.
enum HostileDocuments {
    /// A login page a browser renders fine: upper-case and unquoted markup, misnested and
    /// unclosed tags, entities in the action and in the token, and decoy forms posting to
    /// `/trap` inside a comment and a script, where only a regular expression finds them.
    static func messyLogin(venue: String) -> String {
        let venue = Pages.escape(venue)
        return """
            <!DOCTYPE HTML PUBLIC "-//W3C//DTD HTML 4.01 Transitional//EN">
            <HTML>
            <HEAD>
            <META http-equiv=Content-Type content="text/html; charset=utf-8">
            <TITLE>\(venue) Wi-Fi</title>
            <script type="text/javascript">
              var legacy = '<form method="post" action="/trap"><input type="hidden" name="token" value="script">';
              if (1 < 2 && 3 > 2) { document.write('<\\/form>'); }
            </script>
            <style>FORM[action="/trap"] { display: none }</style>
            </HEAD>
            <body bgcolor=#FFFFFF onload='document.forms.login.agree.focus()'>
            <!-- The old portal, kept for reference:
            <form method="post" action="/trap"><input type="hidden" name="token" value="comment"><input type="submit"></form>
            -->
            <table width=100% border=0>
            <tr><td><p>Welcome to <b>\(venue) <i>Wi-Fi</b></i>
            <p>Read the <a href=/terms>terms</A> & conditions
            <tr><td>
            <FORM Method=POST ACTION='/login?src=portal&amp;lang=en' name=login id=login>
            <INPUT TYPE=hidden NAME=token VALUE="K7&amp;q=&quot;1&quot;">
            <input type='checkbox' name=agree value=yes CHECKED id=agree><label for=agree>I agree</label>
            <input type=text name=nickname placeholder="Nickname (optional)">
            <input type=submit value="Connect &raquo;">
            </td></tr>
            </table>
            </FORM>
            <p>Trouble? <a href=/logout>Log out</a>
            </BODY>

            """
    }

    /// A WISPr message broken every way XML can be: a tag left open, an unterminated
    /// attribute, unknown entities, a bare `&`, a stray end tag, an open CDATA section, no end.
    static func badXML(_ loginURL: String) -> String {
        """
        <?xml version="1.0" encoding="UTF-8"?>
        <WISPAccessGatewayParam xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance">
        <Redirect>
        <MessageType>100</MessageType>
        <ResponseCode>0<ResponseCode>
        <AccessLocation attribute="unterminated>aroma</AccessLocation>
        <LocationName>Caf&eacute; &bogus; & friends</LocationName>
        <LoginURL>\(loginURL)?a=1&b=2</LoginURL>
        </Proxy>
        <![CDATA[ never closed
        <Redirect>

        """
    }

    /// Captive Portal API JSON broken several ways, ending in 50,000 unclosed arrays that a
    /// recursive parser without a depth limit descends into.
    static func badJSON(_ portalURL: String) -> String {
        #"{"captive": tru, "user-portal-url": '\#(portalURL)', "seconds-remaining": NaN,, "list": [1, 2, ], "nested": "#
            + String(repeating: "[", count: 50_000)
    }

    /// About 2 MiB built to hurt regular expressions and naive parsers: a 1 MiB attribute,
    /// 100,000 nested `div`s, misnested inline tags, 50,000 `<a ` never closed (quadratic for
    /// `<a[^>]*>`), comments that nest or never end, and a decoy form inside the last one.
    static let pathologicalHTML: String = {
        var html = "<!DOCTYPE html><html><head><title>Pathological</title></head><body>\n"
        html += "<div id=\"big\" title=\"" + String(repeating: "a", count: 1024 * 1024) + "\">\n"
        html += String(repeating: "<div>", count: 100_000) + "\n"
        html += String(repeating: "<b><i>", count: 10_000) + String(repeating: "</b></i>", count: 10_000) + "\n"
        html += "<!-- <!-- nested --> -->\n<![CDATA[ <form> ]]>\n<?php echo '<form>'; ?>\n"
        html += "<table><tr><td><select><option>unclosed<textarea>\n"
        html += String(repeating: "<a ", count: 50_000) + "\n"
        html += "<p title='unterminated attribute>\n"
        html += #"<!-- never closed <form method="post" action="/trap"><input type="hidden" name="token" value="comment">"#
        return html
    }()
}
