import Synchronization

/// The check that an FFmpeg or VA context is used by one thread at a time, as the pipeline
/// confines each to one stage: every entry point that calls into the context holds it for the
/// call, and a call arriving while it is held (from another thread, or nested) traps at once
/// with the context's name, instead of corrupting it. One atomic exchange per call.
package final class ExclusiveUse: Sendable {
    private let held = Atomic<Bool>(false)
    private let context: StaticString

    /// `context` names the wrapper in the trap's message (`Decoder`, `Muxer`).
    package init(_ context: StaticString) { self.context = context }

    /// Takes the context for one call; `end()` gives it back.
    package func begin(_ call: StaticString = #function) {
        guard held.compareExchange(expected: false, desired: true, ordering: .acquiring).exchanged else {
            fatalError("\(context).\(call) was called while another call was using it: an FFmpeg or VA context is confined to one stage at a time")
        }
    }

    /// Gives the context back after a call.
    package func end() { held.store(false, ordering: .releasing) }
}
