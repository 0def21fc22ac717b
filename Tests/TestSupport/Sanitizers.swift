import Foundation
public import Testing

extension Trait where Self == ConditionTrait {
    /// Skips a test that bounds a wait or a parse by real time when the process runs under
    /// AddressSanitizer (`make check-sanitizers`), whose slowdown exceeds such a bound (a 1 MiB
    /// attribute took 4.5 s of a 3 s one): the sanitizer is there to find memory errors, which
    /// the test's other runs cover, not to time it.
    public static var timedBeyondAddressSanitizer: Self {
        .disabled(if: runsUnderAddressSanitizer, "its real-time bound is shorter than AddressSanitizer's slowdown")
    }
}

/// Whether AddressSanitizer's runtime is in this process (its symbols are, when it is).
public let runsUnderAddressSanitizer = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "__asan_init") != nil
