import HotspotCore
@testable import HotspotRuntime
import LuaSandbox
import Testing

/// A script's questions for a person: its `ui` table, checked at load, or the table
/// `ui_required` is returned with, checked when it comes.
@Suite struct PersonQuestionsLoadingTests {
    static let questionsTable = """
        {
            title = "City Library",
            fields = {
              { name = "email", label = "Email address", kind = "email" },
              { name = "room", label = "Room", kind = "choice", options = { "101", { value = "102", label = "Room 102" } }, required = false },
            },
          }
        """

    @Test func aScriptsUITableIsReadAtLoad() async throws {
        let fixture = try await RuntimeFixture(scripts: [
            "library": "return { name = 'Library', hosts = {}, ui = \(Self.questionsTable),"
                + " authenticate = function(cmd) return 'ui_required' end }\n",
        ])
        let helper = try #require(await fixture.runtime.helpers.first)
        let expected = PersonQuestions(title: "City Library", fields: [
            .init(name: "email", label: "Email address", kind: .email),
            .init(name: "room", label: "Room", kind: .choice, required: false,
                  options: [.init(value: "101", label: "101"), .init(value: "102", label: "Room 102")]),
        ])
        #expect(helper.questions == expected)
        // ui_required without questions of its own carries the script's.
        #expect(await fixture.send(.authenticate, to: helper, network: guest).questions == expected)
    }

    @Test func questionsReturnedWithUIRequiredWin() async throws {
        let fixture = try await RuntimeFixture(scripts: [
            "hotel": """
                return { name = 'Hotel', hosts = {},
                  ui = { title = "Static", fields = { { name = "x", label = "X" } } },
                  authenticate = function(cmd)
                    return "ui_required", { title = "Rooms", fields = { { name = "room", label = "Room", kind = "number" } } }
                  end,
                  maintain = function(cmd)
                    return "ui_required", { title = "Broken", fields = { { name = "room", label = "Room", kind = "date" } } }
                  end,
                }
                """,
        ])
        let helper = try #require(await fixture.runtime.helpers.first)
        let response = await fixture.send(.authenticate, to: helper, network: guest)
        #expect(response.questions == PersonQuestions(title: "Rooms", fields: [.init(name: "room", label: "Room", kind: .number)]))
        // A malformed one is a failure that says what is wrong.
        let broken = await fixture.runtime.transport.send(CommandRequest(.maintain, network: guest, deadline: .seconds(5)), to: helper)
        #expect(broken.result == .failure)
        #expect(broken.error == "the questions returned with ui_required: `ui.fields[1].kind` must be one of text, email, number, "
            + "password, checkbox, choice, not \"date\"")
    }

    @Test func malformedQuestionsAreRefusedWithTheirLine() async throws {
        let engine = try LuaEngine(HotspotRuntime.engineConfiguration())
        defer { engine.shutdown() }
        let cases: [(String, String)] = [
            ("{ fields = { { name = 'a', label = 'A' } } }", "`ui.title` must be a string"),
            ("{ title = 'T', fields = {} }", "`ui.fields` must be a list of at least one field"),
            ("{ title = 'T', fields = { { name = 'a', label = 'A', kind = 'date' } } }",
             "`ui.fields[1].kind` must be one of text, email, number, password, checkbox, choice, not \"date\""),
            ("{ title = 'T', fields = { { name = 'a', label = 'A' }, { name = 'a', label = 'B' } } }",
             "`ui.fields[2].name` \"a\" is asked twice"),
            ("{ title = 'T', fields = { { name = 'a', label = 'A', kind = 'choice' } } }", "`ui.fields[1]` is a choice: give its `options`"),
            ("{ title = 'T', fields = { { name = 'a', label = 'A', pattern = '[' } } }", "`ui.fields[1].pattern` is not a regular expression: ["),
            ("{ title = 'T', fields = { { name = 'a', label = 'A', required = 'yes' } } }", "`ui.fields[1].required` must be true or false"),
        ]
        for (table, message) in cases {
            let script = "return {\n  name = 'Venue',\n  hosts = {},\n  ui = \(table),\n}\n"
            let loaded = await HelperScript.load(path: "venue.lua", text: script, into: engine)
            guard case .failure(let problems) = loaded else {
                Issue.record("loaded with ui = \(table)")
                continue
            }
            #expect(problems.problems.map(\.description) == ["venue.lua:4: \(message)"])
        }
    }
}
