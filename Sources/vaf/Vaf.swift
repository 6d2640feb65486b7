import ArgumentParser
import VAFoundation

/// `vaf`: inspect, probe, transcode and benchmark media on Linux, with VA-API where present.
@main
struct Vaf: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "vaf",
        abstract: "Inspect, probe, transcode and benchmark media with FFmpeg and VA-API.",
        subcommands: [Info.self, Probe.self, Transcode.self, Thumbnails.self, Bench.self]
    )
}
