import FuzzSupport
@testable import LuaSandbox

/// The byte stream between the supervisor and a worker, cut into frames as either end cuts
/// it (arriving in two reads here), each frame decoded, an outcome's values and logs too, as
/// the supervisor reads them. A frame decoded and encoded again decodes to the same encoding.
@main enum WorkerFramesFuzzTarget {
    static func main() {
        fuzz { stream in
            var assembler = FrameAssembler()
            var bodies: [[UInt8]] = []
            for part in [stream[..<(stream.count / 2)], stream[(stream.count / 2)...]] {
                part.withUnsafeBytes { assembler.append($0) }
                while let body = try? assembler.next() { bodies.append(body) }
            }
            for body in bodies {
                guard let (id, frame) = try? WorkerFrame.decode(body) else { continue }
                if case .outcome(let outcome) = frame { _ = outcome.decoded(memoryLimit: 16 << 20) }
                let encoded = frame.encoded(id: id)
                guard let (againID, again) = try? WorkerFrame.decode(Array(encoded.dropFirst(4))) else {
                    fatalError("a frame encoded again does not decode")
                }
                require(again.encoded(id: againID) == encoded, "a frame encoded again decodes to another")
            }
        }
    }
}
