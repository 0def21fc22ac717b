import ArgumentParser
package import HotspotCore
import HotspotNetwork

/// A probe given on the command line (`--probe-url`, `probe --url`), parsed once as the
/// option is read; the daemon and the scripts' workers carry the typed probe from there.
package struct ProbeArgument: Sendable, Decodable {
    package let probe: Probe

    /// The parser of the option, saying what is wrong with a probe that does not parse.
    package static let parse: @Sendable (String) throws -> ProbeArgument = { text in
        switch Probe.parse(text) {
        case .success(let probe): return ProbeArgument(probe: probe)
        case .failure(let error): throw ValidationError(error.problem)
        }
    }

    private init(probe: Probe) {
        self.probe = probe
    }

    // Decodable only because ArgumentParser asks it of every option's type.
    package init(from decoder: any Decoder) throws {
        self = try Self.parse(try decoder.singleValueContainer().decode(String.self))
    }
}
