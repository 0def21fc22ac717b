import Foundation
import HotspotCore
import Testing
@testable import HotspotRuntime

@Suite struct StateDirectoryTests {
    @Test func temporaryFilesACrashLeftAreRemovedWhenTheDirectoryIsOpened() throws {
        let directory = RuntimeFixture.temporaryDirectory()
        try FileManager.default.createDirectory(atPath: directory + "/store", withIntermediateDirectories: true)
        let leftovers = [directory + "/state.json.tmp-4242", directory + "/store/venue.json.tmp-4243"]
        for file in leftovers { try "{\"partial".write(toFile: file, atomically: false, encoding: .utf8) }
        try "{}".write(toFile: directory + "/store/venue.json", atomically: false, encoding: .utf8)
        let state = try StateDirectory(path: directory)
        for file in leftovers { #expect(!FileManager.default.fileExists(atPath: file), "\(file) is still there") }
        #expect(FileManager.default.fileExists(atPath: directory + "/store/venue.json"))
        #expect(state.warnings.isEmpty)
    }

    @Test func aStateFileTooLargeIsSetAsideUnreadWithAWarning() throws {
        let directory = RuntimeFixture.temporaryDirectory()
        let file = directory + "/state.json"
        // Valid JSON, so only its size can be why it is set aside.
        let large = "{\"chosenHelpers\":{}" + String(repeating: " ", count: StateDirectory.fileSizeLimit) + "}"
        try large.write(toFile: file, atomically: false, encoding: .utf8)
        let state = try StateDirectory(path: directory)
        #expect(state.snapshot == PersistentState())
        #expect(state.warnings.count == 1)
        #expect(state.warnings.first?.contains("larger than 8 MiB") == true, "\(state.warnings)")
        #expect(!FileManager.default.fileExists(atPath: file))
    }

    /// SSIDs are bytes: the NFC and NFD forms of one name are two networks, in memory and in
    /// the file (whose keys would otherwise merge them, as a JSON object's decoder does).
    @Test func theNFCAndNFDFormsOfOneNameStayTwoNetworksAcrossARestart() throws {
        let directory = RuntimeFixture.temporaryDirectory()
        let (composed, decomposed) = ("Caf\u{E9}", "Cafe\u{301}")
        do {
            let state = try StateDirectory(path: directory)
            try state.update {
                $0.chosenHelpers[composed] = "first"
                $0.chosenHelpers[decomposed] = "second"
                $0.exclusions[decomposed] = ["picky"]
                $0.autoJoinDisabled.insert(composed)
                $0.disabledForNetwork[decomposed] = ["off"]
            }
        }
        let saved = try String(contentsOfFile: directory + "/state.json", encoding: .utf8)
        #expect(saved.contains("\"ssidHex\" : \"436166c3a9\""), "\(saved)")
        let reopened = try StateDirectory(path: directory).snapshot
        #expect(reopened.chosenHelpers[composed] == "first")
        #expect(reopened.chosenHelpers[decomposed] == "second")
        #expect(reopened.exclusions[composed] == nil && reopened.exclusions[decomposed] == ["picky"])
        #expect(reopened.autoJoinDisabled.contains(composed) && !reopened.autoJoinDisabled.contains(decomposed))
        #expect(reopened.disabledForNetwork[composed] == nil && reopened.disabledForNetwork[decomposed] == ["off"])
        #expect(reopened.chosenHelpers.all.map { Array($0.ssid.utf8) }.sorted { $0.lexicographicallyPrecedes($1) }
                == [Array(composed.utf8), Array(decomposed.utf8)].sorted { $0.lexicographicallyPrecedes($1) })
    }

    /// A helper's `cmd.store` is the network's: the NFC and NFD forms of one name keep a store
    /// each, in memory and across a restart.
    @Test func theNFCAndNFDFormsOfOneNameKeepAStoreEach() throws {
        let directory = RuntimeFixture.temporaryDirectory()
        let (composed, decomposed) = ("Caf\u{E9}", "Cafe\u{301}")
        do {
            let state = try StateDirectory(path: directory)
            try state.setStore(["token": "composed"], helper: "venue", ssid: composed)
            try state.setStore(["token": "decomposed"], helper: "venue", ssid: decomposed)
            #expect(state.store(helper: "venue", ssid: composed) == ["token": "composed"])
        }
        let saved = try String(contentsOfFile: directory + "/store/venue.json", encoding: .utf8)
        #expect(saved.contains("\"ssidHex\" : \"436166c3a9\""), "\(saved)")
        let reopened = try StateDirectory(path: directory)
        #expect(reopened.warnings.isEmpty, "\(reopened.warnings)")
        #expect(reopened.store(helper: "venue", ssid: composed) == ["token": "composed"])
        #expect(reopened.store(helper: "venue", ssid: decomposed) == ["token": "decomposed"])
    }

    /// A store file of the format before, an object keyed by SSID, is read as it was written.
    @Test func aStoreFileOfTheFormatBeforeIsRead() throws {
        let directory = RuntimeFixture.temporaryDirectory()
        try FileManager.default.createDirectory(atPath: directory + "/store", withIntermediateDirectories: true)
        try #"{"Cafe":{"token":"abc"},"Hotel":{"room":"12"}}"#
            .write(toFile: directory + "/store/venue.json", atomically: false, encoding: .utf8)
        let state = try StateDirectory(path: directory)
        #expect(state.warnings.isEmpty, "\(state.warnings)")
        #expect(state.store(helper: "venue", ssid: "Cafe") == ["token": "abc"])
        #expect(state.store(helper: "venue", ssid: "Hotel") == ["room": "12"])
    }

    /// A state file of the format before, keyed by SSID, is read as it was written.
    @Test func aStateFileOfTheFormatBeforeIsRead() throws {
        let directory = RuntimeFixture.temporaryDirectory()
        try """
            {"chosenHelpers":{"Cafe":"aroma"},"exclusions":{"Cafe":["picky"]},"autoJoinDisabled":["Hotel"],
             "disabledHelpers":["gone"],"disabledForNetwork":{"Hotel":["aroma"]}}
            """.write(toFile: directory + "/state.json", atomically: false, encoding: .utf8)
        let state = try StateDirectory(path: directory)
        #expect(state.warnings.isEmpty, "\(state.warnings)")
        var expected = PersistentState()
        expected.chosenHelpers = ["Cafe": "aroma"]
        expected.exclusions = ["Cafe": ["picky"]]
        expected.autoJoinDisabled = ["Hotel"]
        expected.disabledHelpers = ["gone"]
        expected.disabledForNetwork = ["Hotel": ["aroma"]]
        #expect(state.snapshot == expected)
    }

    @Test func oneProcessOwnsTheDirectoryAndItsStateDirectoriesShareIt() throws {
        let directory = RuntimeFixture.temporaryDirectory()
        // flock is per open file: a descriptor of this test's own stands in for another process.
        let other = open(directory + "/owner.lock", O_RDWR | O_CREAT, 0o600)
        defer { close(other) }
        do {
            let first = try StateDirectory(path: directory)
            // Another spelling of the same path, in the same process: the same owner.
            let second = try StateDirectory(path: directory + "/")
            try second.update { $0.autoJoinDisabled = ["X"] }
            #expect(first.snapshot.autoJoinDisabled.isEmpty)  // each keeps what it read and wrote
            #expect(try String(contentsOfFile: directory + "/owner.lock", encoding: .utf8) == "\(getpid())\n")
            #expect(flock(other, LOCK_EX | LOCK_NB) != 0, "held while a StateDirectory of it lives")
        }
        #expect(flock(other, LOCK_EX | LOCK_NB) == 0, "released when the last one goes")
    }

    /// A write that fails (here: a directory where the file goes, which fails as a full file
    /// system or a read-only directory does, even for root) keeps the change in memory, says
    /// it will be written later, and is written once it can be.
    @Test func aFailedWriteIsKeptInMemoryAndRetriedUntilItIsWritten() async throws {
        let directory = RuntimeFixture.temporaryDirectory()
        let state = try StateDirectory(path: directory, retryInterval: .milliseconds(50))
        let blocker = directory + "/state.json"
        try FileManager.default.createDirectory(atPath: blocker + "/in-the-way", withIntermediateDirectories: true)
        #expect {
            try state.update { $0.chosenHelpers["Venue-Guest"] = "venue" }
        } throws: { error in
            "\(error)".contains("the change is kept in memory and written again every 0.05 seconds until it can be")
        }
        #expect(state.snapshot.chosenHelpers == ["Venue-Guest": "venue"])
        #expect(!state.isSaved)
        try await Task.sleep(for: .milliseconds(200))  // real time is the point: several retries' intervals
        #expect(!state.isSaved, "written while it cannot be")
        try FileManager.default.removeItem(atPath: blocker)
        try await eventually("the state is written once it can be") { state.isSaved }
        #expect(try StateDirectory(path: directory).snapshot.chosenHelpers == ["Venue-Guest": "venue"])
    }

    /// A read-only state directory that is there was reported as one that "cannot be created".
    @Test func aStateDirectoryThatIsThereButUnwritableIsNotCalledUncreatable() throws {
        let directory = RuntimeFixture.temporaryDirectory()
        // A file where `store` goes fails for root too, as a read-only directory does for others.
        try "".write(toFile: directory + "/store", atomically: false, encoding: .utf8)
        #expect {
            try StateDirectory(path: directory)
        } throws: { error in
            "\(error)".hasPrefix("the state directory \(directory) is there, but \(directory)/store cannot be made in it: ")
        }
    }
}
