@testable import LuaSandbox
import Testing

@Suite struct FirstInFirstOutTests {
    /// Taking and adding in turns, as a busy worker's queue of ready scripts does, crosses
    /// the points where the queue drops its emptied front; the order must survive them.
    @Test func keepsTheOrderAcrossItsCompactions() {
        var queue = FirstInFirstOut<Int>()
        var expected: [Int] = []
        var taken: [Int] = []
        var next = 0
        for round in 0..<50 {
            for _ in 0..<(round % 7 + 3) {
                queue.append(next)
                expected.append(next)
                next += 1
            }
            for _ in 0..<(round % 5 + 2) {
                if let value = queue.removeFirst() { taken.append(value) }
            }
            #expect(queue.count == expected.count - taken.count)
        }
        while let value = queue.removeFirst() { taken.append(value) }
        #expect(taken == expected)
        #expect(queue.count == 0)
    }
}
