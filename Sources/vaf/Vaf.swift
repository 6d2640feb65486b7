import ArgumentParser
import FFmpegSupport
import Foundation
import VAFoundation

/// `vaf`: inspect, probe, transcode, render timelines and benchmark media on Linux, with VA-API where present.
@main
struct Vaf: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "vaf",
        abstract: "Inspect, probe, transcode and benchmark media with FFmpeg and VA-API.",
        version: "vaf \(Vaf.version) (\(FFmpegLibraries.versions))",
        subcommands: [Info.self, Probe.self, Transcode.self, Package.self, Verify.self, Render.self, Thumbnails.self, Bench.self]
    )

    /// The release, as `vaf --version` prints it with the FFmpeg libraries loaded.
    static let version = "0.9.0"

    static func main() async {
        StandardOutput.ignoreBrokenPipes()
        await main(filesNotOptions(Array(CommandLine.arguments.dropFirst())))
    }

    /// The arguments with each one that starts with a single dash but names an existing file
    /// (`-dash.mp4`) written as `./-dash.mp4`, so the parser takes it as the file it is rather
    /// than as short options (`-d -a -s -h`, which printed help). Arguments after `--` are
    /// files already and stay as they are.
    static func filesNotOptions(_ arguments: [String], fileExists: (String) -> Bool = { FileManager.default.fileExists(atPath: $0) }) -> [String] {
        var result: [String] = []
        var afterTerminator = false
        for argument in arguments {
            if argument == "--" { afterTerminator = true }
            let dashed = argument.count > 1 && argument.hasPrefix("-") && !argument.hasPrefix("--")
            result.append(!afterTerminator && dashed && fileExists(argument) ? "./" + argument : argument)
        }
        return result
    }
}
