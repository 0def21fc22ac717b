@testable import HotspotRuntime
import Testing
import HotspotCore

@Suite("Secrets file")
struct SecretsParsingTests {
    @Test func sectionsNamesAndQuotedValues() throws {
        let secrets = try Secrets.parse("""
            # comment
            [aroma]
            username = guest
            password = "two words "
            ; another comment

            [campus]
            token=abc=def
            """, path: "s.ini")
        #expect(secrets.of(helper: "aroma") == ["username": "guest", "password": "two words "])
        #expect(secrets.of(helper: "campus") == ["token": "abc=def"])
        #expect(secrets.of(helper: "other").isEmpty)
    }

    @Test(arguments: [
        ("user = x", "s.ini:1: a secret comes after a [helper] section line"),
        ("[aroma]\nno equals here", "s.ini:2: expected `name = value`"),
        ("[aroma]\n = value", "s.ini:2: the secret has no name before `=`"),
        ("[]", "s.ini:1: a section is a helper's name in brackets, such as [aroma]"),
    ])
    func problemsNameTheLine(text: String, message: String) {
        #expect(throws: SecretsError.self) { try Secrets.parse(text, path: "s.ini") }
        do {
            _ = try Secrets.parse(text, path: "s.ini")
        } catch {
            #expect(error.description == message)
        }
    }

    @Test func aFileSavedWithCRLFReadsAsItsLines() throws {
        let secrets = try Secrets.parse("[aroma]\r\nusername = guest\r\npassword = \"two words\"\r\n", path: "s.ini")
        #expect(secrets.of(helper: "aroma") == ["username": "guest", "password": "two words"])
        #expect(throws: SecretsError.self) { try Secrets.parse("[aroma]\r\nbroken\r\n", path: "s.ini") }
        do {
            _ = try Secrets.parse("[aroma]\r\nbroken\r\n", path: "s.ini")
        } catch {
            #expect(error.description == "s.ini:2: expected `name = value`")
        }
    }

    @Test func redactionHidesLongerSecretsWhole() {
        let secrets = Secrets(["a": ["short": "abc", "long": "abcdef"]])
        #expect(secrets.redact("x abcdef y abc z") == "x [secret] y [secret] z")
        #expect(secrets.redact(.log(.info, "abcdef!")) == .log(.info, "[secret]!"))
        let failed = CommandEvent(network: "Venue", command: .authenticate, helper: "a", result: .failure, milliseconds: 1, error: "bad abc")
        var redacted = failed
        redacted.error = "bad [secret]"
        #expect(secrets.redact(.command(failed)) == .command(redacted))
    }

    /// `cmd:http`'s own failures quote the URL percent-encoded, a form body has `+` for
    /// spaces, and JSON escapes quotes, slashes and characters: each once slipped past.
    @Test(arguments: [
        ("https://portal.test/login?password=correct%20horse%20battery%20staple&x=1", "https://portal.test/login?password=[secret]&x=1"),
        ("body: user=guest&pass=correct+horse+battery+staple", "body: user=guest&pass=[secret]"),
        ("pass=correct%20horse+battery%20staple", "pass=[secret]"),
        (#"{"password":"correct horse battery staple"}"#, #"{"password":"[secret]"}"#),
        ("lower %63orrect horse battery staple", "lower [secret]"),
        (#"{"p":"d\u00e9j\u00e0 \"vu\"\/2"}"#, #"{"p":"[secret]"}"#),
        ("d%C3%A9j%C3%A0%20%22vu%22%2F2 and d%c3%a9j%c3%a0+%22vu%22/2", "[secret] and [secret]"),
        ("correct horse battery", "correct horse battery"),
    ])
    func redactionHidesEncodedForms(text: String, expected: String) {
        let secrets = Secrets(["a": ["password": "correct horse battery staple", "other": "déjà \"vu\"/2"]])
        #expect(secrets.redact(text) == expected)
    }

    /// A secret in a `ui_required` title or label reached `status` and the person's page.
    @Test func redactionHidesSecretsInQuestionsTextsButNotTheirNames() {
        let secrets = Secrets(["a": ["code": "s3cret-code"]])
        let questions = PersonQuestions(title: "Room s3cret-code", message: "code s3cret-code", fields: [
            .init(name: "s3cret-code", label: "Confirm s3cret-code", kind: .choice,
                  options: [.init(value: "s3cret-code", label: "s3cret-code")]),
        ])
        let redacted = secrets.redact(questions)
        #expect(redacted.title == "Room [secret]" && redacted.message == "code [secret]")
        #expect(redacted.fields[0].label == "Confirm [secret]" && redacted.fields[0].options[0].label == "[secret]")
        #expect(redacted.fields[0].name == "s3cret-code" && redacted.fields[0].options[0].value == "s3cret-code")
    }
}
