import Testing
import TestSupport
@testable import HotspotCore

/// What a helper asks a person, and the answers checked against it before `present_ui`.
@Suite struct PersonQuestionsTests {
    static let questions = PersonQuestions(title: "City Library", message: "Your email lets you in.", fields: [
        .init(name: "email", label: "Email address", kind: .email),
        .init(name: "room", label: "Room", kind: .choice, required: false,
              options: [.init(value: "101", label: "Room 101"), .init(value: "102", label: "Room 102")]),
        .init(name: "guests", label: "Guests", kind: .number, required: false),
        .init(name: "terms", label: "I accept the terms", kind: .checkbox),
        .init(name: "code", label: "Voucher", required: false, pattern: "[A-Z]{4}-[0-9]{4}"),
    ])

    @Test func answersThatDoHaveNoProblemsAndAreNormalized() {
        let answers = ["email": "  reader@example.org ", "room": "102", "terms": "Yes", "code": "ABCD-1234"]
        #expect(Self.questions.problems(with: answers).isEmpty)
        #expect(Self.questions.normalized(answers) == ["email": "reader@example.org", "room": "102", "terms": "true", "code": "ABCD-1234"])
    }

    @Test func eachProblemIsNamedForThePerson() {
        let problems = Self.questions.problems(with: [
            "room": "103", "guests": "two", "terms": "no", "code": "abcd", "emial": "x@example.org",
        ])
        #expect(problems == [
            "nothing is asked as \"emial\"; the questions are email, room, guests, terms, code",
            "Email address (email) is required",
            "Room (room) must be one of 101, 102",
            "Guests (guests) must be a number",
            "I accept the terms (terms) must be checked",
            "Voucher (code) is not in the expected form",
        ])
        #expect(Self.questions.problems(with: ["email": "not an address", "terms": "maybe"]) == [
            "Email address (email) must be an email address, such as name@example.org",
            "I accept the terms (terms) must be yes or no",
        ])
    }

    /// Answers that do not do are not sent: the network keeps waiting, nothing fails, and
    /// answers that do reach the helper normalized.
    @Test func presentUIGoesOnlyWithAnswersThatDo() async {
        let harness = Harness("library")
        harness.transport.answer("library", .evaluate, .claims(.high))
        harness.transport.answer("library", .authenticate, HelperResponse(result: .uiRequired, questions: Self.questions))
        harness.transport.answer("library", .presentUI) { request in
            request.answers == ["email": "reader@example.org", "terms": "true"] ? .success : .failure("answers \(request.answers)")
        }
        #expect(await harness.machine.join(cafe) == .presentingUI)
        #expect(await harness.machine.questions(of: "Cafe") == Self.questions)
        #expect(await harness.machine.presentUI("Cafe", answers: ["terms": "yes"]) == .presentingUI)
        #expect(!harness.transport.sent.contains("library:present_ui"))
        #expect(harness.events.logs.last?.message.contains("Email address (email) is required") == true)
        #expect(harness.persistence.snapshot.autoJoinDisabled.isEmpty)
        #expect(await harness.machine.presentUI("Cafe", answers: ["email": "reader@example.org", "terms": "on"]) == .authenticated)
        #expect(await harness.machine.questions(of: "Cafe") == nil)
    }

    /// The questions belong to `ui_required`: any other answer carries none.
    @Test func onlyUIRequiredCarriesQuestions() {
        let answered = HelperResponse(result: .success, questions: Self.questions).checked(answering: .authenticate)
        #expect(answered.questions == nil)
    }
}
