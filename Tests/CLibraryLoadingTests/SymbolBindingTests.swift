import CLibraryLoading
import Glibc
import Testing

/// What every library loader binds through: all of a library's functions or none, and a
/// message that names the first one missing.
@Suite struct SymbolBindingTests {
    /// A name for C that outlives every call: a literal's bytes.
    static func cName(_ name: StaticString) -> UnsafePointer<CChar> {
        UnsafeRawPointer(name.utf8Start).assumingMemoryBound(to: CChar.self)
    }

    @Test func everySymbolIsBoundOrTheFirstMissingIsNamed() throws {
        let library = try #require(dlopen("libc.so.6", RTLD_NOW | RTLD_LOCAL))
        defer { dlclose(library) }
        var failure = [CChar](repeating: 0, count: 128)
        var strlenSlot: UnsafeMutableRawPointer?
        var getpidSlot: UnsafeMutableRawPointer?
        let found = withUnsafeMutablePointer(to: &strlenSlot) { strlenAddress in
            withUnsafeMutablePointer(to: &getpidSlot) { getpidAddress in
                let symbols = [hh_symbol(name: Self.cName("strlen"), slot: strlenAddress), hh_symbol(name: Self.cName("getpid"), slot: getpidAddress)]
                return hh_bind_symbols(library, "libc.so.6", symbols, UInt(symbols.count), &failure, UInt(failure.count))
            }
        }
        #expect(found == nil)
        #expect(strlenSlot == dlsym(library, "strlen") && strlenSlot != nil)
        #expect(getpidSlot != nil)

        var missingSlot: UnsafeMutableRawPointer?
        let message = withUnsafeMutablePointer(to: &missingSlot) { missingAddress in
            let symbols = [hh_symbol(name: Self.cName("strlen"), slot: missingAddress), hh_symbol(name: Self.cName("hh_no_such_function"), slot: missingAddress)]
            return hh_bind_symbols(library, "libc.so.6", symbols, UInt(symbols.count), &failure, UInt(failure.count)).map { String(cString: $0) }
        }
        #expect(message == "libc.so.6 lacks hh_no_such_function")
    }
}
