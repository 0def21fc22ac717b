#if canImport(Glibc)
import Glibc
#endif
import CLibFuzzer

/// What the running target does with one input.
nonisolated(unsafe) private var target: (([UInt8]) -> Void)?

/// Runs libFuzzer, as this process's command line says, with `body` as the target, and exits
/// with libFuzzer's status. A target reports what it finds by crashing: a failed `require`
/// is a finding like any other.
///
/// SwiftPM links `main` to each executable's own entry point (the `@main` type), so
/// libFuzzer's `main` never runs: the entry point hands the target to libFuzzer's driver.
public func fuzz(_ body: @escaping ([UInt8]) -> Void) -> Never {
    target = body
    var argc = CommandLine.argc
    var argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>? = CommandLine.unsafeArgv
    exit(LLVMFuzzerRunDriver(&argc, &argv, testOneInput))
}

/// The target as libFuzzer calls it. libFuzzer's own `main`, linked in with the rest of it,
/// names this symbol, so it must exist by this name.
@_cdecl("LLVMFuzzerTestOneInput")
public func testOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    target?(Array(UnsafeBufferPointer(start: data, count: size)))
    return 0
}

/// Stops the run with `message` when `condition` is false: a finding. Unlike `precondition`,
/// it keeps its message in an optimized build.
public func require(_ condition: @autoclosure () -> Bool, _ message: @autoclosure () -> String) {
    if !condition() { fatalError(message()) }
}
