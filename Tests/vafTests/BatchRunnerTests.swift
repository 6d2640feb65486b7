import Foundation
import Testing
import VAFoundation
@testable import vaf

/// The one loop every batch command runs its inputs through: N at a time, in order, and the
/// inputs a stopping signal kept from starting reported as such.
@Suite struct BatchRunnerTests {
    @Test func runEachKeepsItsBoundAndReportsTheItemsACancelKeptFromStarting() async {
        let running = Locked((now: 0, most: 0))
        let endedOrder = Locked<[Int]>([])
        let results = await Task {
            await BatchRunner.runEach(Array(0..<6), concurrency: 2) { item in
                running.withLock { $0.now += 1; $0.most = max($0.most, $0.now) }
                defer { running.withLock { $0.now -= 1 } }
                return "done \(item)"
            } ended: { output in
                endedOrder.withLock { $0.append(Int(output.dropFirst(5))!) }
                // A stopping signal as the first item ends: the one running ends, no other starts.
                if endedOrder.withLock({ $0.count }) == 1 { withUnsafeCurrentTask { $0?.cancel() } }
            } unstarted: { item in
                "not started \(item)"
            }
        }.value
        #expect(running.withLock { $0.most } <= 2, "at most 2 at once")
        #expect(Set(endedOrder.withLock { $0 }) == [0, 1], "the two started end: \(endedOrder.withLock { $0 })")
        #expect(results == ["done 0", "done 1", "not started 2", "not started 3", "not started 4", "not started 5"])
        let all = await BatchRunner.runEach(Array(0..<5), concurrency: 3) { "\($0)" } ended: { _ in } unstarted: { _ in "never" }
        #expect(all == ["0", "1", "2", "3", "4"], "in the items' order")
    }
}
