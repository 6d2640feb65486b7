import Dispatch
import Foundation
import VAFoundation

/// libFuzzer's driver, from the runtime linked without its own `main` (Fuzz/run.sh links
/// `libclang_rt.fuzzer_no_main`): SwiftPM makes this module's entry point the program's `main`.
@_silgen_name("LLVMFuzzerRunDriver")
func LLVMFuzzerRunDriver(_ argc: UnsafeMutablePointer<CInt>,
                         _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?>,
                         _ callback: @convention(c) (UnsafePointer<UInt8>?, Int) -> CInt) -> CInt

/// Where each input is written: the engine reads files, as users give them.
let scratch = FileManager.default.temporaryDirectory.appendingPathComponent("vaf-fuzz-\(getpid()).bin")

/// Inspects the bytes as a media file and reads a few samples of each track, decoded (video at
/// its own size, audio as float PCM); errors are the expected outcome for most inputs, and only
/// a crash, a sanitizer report, a hang or runaway memory is a finding.
func exercise(_ bytes: UnsafeRawBufferPointer) {
    guard FileManager.default.createFile(atPath: scratch.path, contents: Data(bytes)) else { return }
    let done = DispatchSemaphore(value: 0)
    // The async loading API runs on Swift's pool; this thread (libFuzzer's) waits for it.
    Task.detached {
        defer { done.signal() }
        let asset = Asset(url: scratch)
        guard let tracks = try? await asset.load(.tracks) else { return }
        for track in tracks where track.mediaType == .video || track.mediaType == .audio {
            let reader = AssetReader(asset: asset)
            let settings: ReaderOutputSettings = track.mediaType == .video
                ? .video(PixelBufferAttributes(pixelFormat: .yuv420p))
                : .audio(LinearPCMSettings(bitDepth: 32, isFloat: true, isInterleaved: false))
            guard let output = try? AssetReaderTrackOutput(track: track, outputSettings: settings),
                  (try? reader.add(output)) != nil, (try? reader.startReading()) != nil else { continue }
            for _ in 0..<8 { guard (try? output.copyNextSampleBuffer()) ?? nil != nil else { break } }
            reader.cancelReading()
        }
    }
    done.wait()
}

@_cdecl("VAFFuzz_main")
func fuzzMain(_ argc: CInt, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> CInt {
    var count = argc
    var arguments = argv
    let status = LLVMFuzzerRunDriver(&count, &arguments) { data, size in
        exercise(UnsafeRawBufferPointer(start: data, count: size))
        return 0
    }
    try? FileManager.default.removeItem(at: scratch)
    return status
}
