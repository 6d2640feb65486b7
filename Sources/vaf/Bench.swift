import ArgumentParser
import BenchKit
import ChildProcess
import Foundation
import VAFoundation

extension Vaf {
    /// `vaf bench`: sources × targets × paths, each run as a measured child process, against
    /// FFmpeg as the baseline; reports as a table, JSON, CSV and an SVG chart.
    struct Bench: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Benchmark transcodes: synthetic and given sources × targets × software/hybrid/hardware paths, against ffmpeg.",
            discussion: """
                Every run is a child process (`vaf transcode …` or `ffmpeg …`) measured alike with wait4: wall \
                and CPU seconds, peak RSS. Each path gets --warmups unmeasured runs, then --runs measured runs; \
                rounds interleave the paths (A B A B) and ratios against ffmpeg are taken pair by pair. Quality \
                (PSNR, SSIM) of each path's first measured output against the source is computed by our own code.

                Paths that cannot run here are listed as skipped with the reason (no device, no --hw in this vaf, \
                ffmpeg missing or failing). Device paths on SoftVA are labelled CPU-emulated.

                --quick: one 640x360 30 fps source of 2 s × h264, remux and jpeg; 1 warm-up + 3 runs; finishes \
                in under 2 minutes on 2 cores (release build). The JSON layout is in Benchmarks/BENCH.md.

                Exit status: 0 when the bench ran (skipped paths included); 1 when a run of ours failed; 64 for a \
                usage error.
                """)

        @Option(name: .customLong("input"), help: ArgumentHelp("A media file to benchmark besides the synthetic sources (repeatable).", valueName: "file"))
        var inputs: [String] = []

        @Flag(help: "A CI-sized run: one small source, targets h264, remux and jpeg, 1 warm-up + 3 runs.")
        var quick = false

        @Option(help: ArgumentHelp("Synthetic sources, comma-separated: 360p30, 720p30, 1080p30, 1080p60, 2160p30, or none (default: 720p30,1080p30,1080p60,2160p30; --quick: 360p30).", valueName: "list"))
        var sources: String?

        @Option(help: ArgumentHelp("Targets, comma-separated: h264, hevc, h264-720p, remux, fps30, jpeg (default: h264,hevc,h264-720p,remux,fps30; --quick: h264,remux,jpeg).", valueName: "list"))
        var targets: String?

        @Option(help: ArgumentHelp("Paths, comma-separated: software, hybrid, hardware, ffmpeg, ffmpeg-vaapi (default: all).", valueName: "list"))
        var paths: String?

        @Option(help: ArgumentHelp("Measured runs per path (default 5; --quick: 3).", valueName: "n"))
        var runs: Int?

        @Option(help: ArgumentHelp("Unmeasured warm-up runs per path.", valueName: "n"))
        var warmups: Int = 1

        @Option(help: ArgumentHelp("Length of the synthetic sources in seconds (default 5; --quick: 2).", valueName: "seconds"))
        var seconds: Double?

        @Option(help: ArgumentHelp("Codec of the synthetic sources: h264, mjpeg, or auto (mjpeg when the device decodes JPEG but not H.264; else h264).", valueName: "codec"))
        var sourceCodec: String = "auto"

        @Option(help: ArgumentHelp("VA-API device for the device paths: a render node (/dev/dri/renderD128) or an X display (:0); default: the first usable render node.", valueName: "path"))
        var device: String?

        @Option(help: ArgumentHelp("The ffmpeg program for the baseline (default: ffmpeg on PATH).", valueName: "path"))
        var ffmpeg: String?

        @Flag(help: "Do not run the ffmpeg baseline.")
        var noFFmpeg = false

        @Flag(help: "Skip PSNR/SSIM.")
        var noQuality = false

        @Option(help: ArgumentHelp("Where sources are cached and outputs written (default: $TMPDIR/vaf-bench).", valueName: "dir"))
        var workDir: String?

        @Option(help: ArgumentHelp("Where bench.json, bench.csv and bench.svg go.", valueName: "dir"))
        var reportDir: String = "vaf-bench-report"

        @Option(help: ArgumentHelp("Write the JSON report here instead (- for stdout, then the table goes to stderr).", valueName: "file"))
        var json: String?

        @Option(help: ArgumentHelp("Write the CSV here instead.", valueName: "file"))
        var csv: String?

        @Option(help: ArgumentHelp("Write the SVG chart here instead.", valueName: "file"))
        var svg: String?

        @Option(help: ArgumentHelp("Kill a run after this many seconds.", valueName: "seconds"))
        var timeout: Double = 900

        func validate() throws {
            _ = try parsedSources()
            _ = try parsedTargets()
            _ = try parsedPaths()
            if let runs, runs < 1 { throw ValidationError("--runs must be at least 1.") }
            guard warmups >= 0 else { throw ValidationError("--warmups cannot be negative.") }
            if let seconds, !(seconds > 0 && seconds <= 600) { throw ValidationError("--seconds takes a length between 0 and 600.") }
            guard ["auto", "h264", "mjpeg"].contains(sourceCodec.lowercased()) else { throw ValidationError("--source-codec takes h264, mjpeg or auto.") }
            guard timeout > 0 else { throw ValidationError("--timeout must be positive.") }
            for input in inputs where !FileManager.default.isReadableFile(atPath: input) {
                throw ValidationError("--input \(input): no such readable file.")
            }
            if let ffmpeg, !noFFmpeg, ChildProcess.which(ffmpeg) == nil { throw ValidationError("--ffmpeg \(ffmpeg): not an executable.") }
            if try parsedSources().isEmpty && inputs.isEmpty { throw ValidationError("Nothing to benchmark: --sources none and no --input.") }
        }

        func run() async throws {
            let device = BenchDevice.detect(requested: device)
            let codec: VideoCodec = switch sourceCodec.lowercased() {
            case "h264": .h264
            case "mjpeg": .mjpeg
            default: device.path != nil && device.decodes(.jpeg) && !device.decodes(.h264) ? .mjpeg : .h264
            }
            let vaf = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? CommandLine.arguments[0]
            let work = URL(fileURLWithPath: workDir ?? FileManager.default.temporaryDirectory.appendingPathComponent("vaf-bench").path)
            try FileManager.default.createDirectory(at: work, withIntermediateDirectories: true)
            let configuration = BenchConfiguration(
                quick: quick, runs: runs ?? (quick ? 3 : 5), warmups: warmups, seconds: seconds ?? (quick ? 2 : 5),
                syntheticSources: try parsedSources(), inputs: inputs, targets: try parsedTargets(), paths: try parsedPaths(),
                sourceCodec: codec, workDirectory: work, quality: !noQuality, timeLimit: timeout, vaf: vaf,
                ffmpeg: noFFmpeg ? nil : ChildProcess.which(ffmpeg ?? "ffmpeg"), device: device)
            let runner = BenchMatrixRunner(configuration: configuration) { line in
                FileHandle.standardError.write(Data((line + "\n").utf8))
            }
            let report = await runner.run()
            try write(report)
            let ourFailure = report.jobs.contains { job in job.paths.contains { $0.tool == "vaf" && $0.status == .failed } }
            if ourFailure { throw ExitCode(1) }
        }

        /// The table to stdout (stderr when the JSON goes to stdout), and the report files.
        private func write(_ report: BenchReport) throws {
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
            let jsonData = try encoder.encode(report)
            let directory = URL(fileURLWithPath: reportDir)
            let jsonPath = json ?? directory.appendingPathComponent("bench.json").path
            let csvPath = csv ?? directory.appendingPathComponent("bench.csv").path
            let svgPath = svg ?? directory.appendingPathComponent("bench.svg").path
            var written: [String] = []
            if jsonPath == "-" {
                StandardOutput.write(jsonData + Data("\n".utf8))
            } else {
                try Self.write(jsonData, to: jsonPath)
                written.append(jsonPath)
            }
            try Self.write(Data(report.csv().utf8), to: csvPath)
            try Self.write(Data(report.svg().utf8), to: svgPath)
            written += [csvPath, svgPath]
            let table = report.table() + "\nwrote \(written.joined(separator: ", "))\n"
            if jsonPath == "-" { FileHandle.standardError.write(Data(table.utf8)) } else { print(table, terminator: "") }
        }

        private static func write(_ data: Data, to path: String) throws {
            let url = URL(fileURLWithPath: path)
            try FileManager.default.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
            try data.write(to: url, options: .atomic)
        }

        func parsedSources() throws -> [SyntheticSource] {
            let names = list(sources) ?? (quick ? ["360p30"] : SyntheticSource.standard)
            if names == ["none"] { return [] }
            return try names.map { name in
                guard let source = SyntheticSource.named(name) else {
                    throw ValidationError("Unknown source '\(name)'; use \(SyntheticSource.all.map(\.name).joined(separator: ", ")) or none.")
                }
                return source
            }
        }

        func parsedTargets() throws -> [BenchTarget] {
            guard let names = list(targets) else { return quick ? BenchTarget.quick : BenchTarget.standard }
            return try names.map { name in
                guard let target = BenchTarget(rawValue: name) else {
                    throw ValidationError("Unknown target '\(name)'; use \(BenchTarget.allCases.map(\.rawValue).joined(separator: ", ")).")
                }
                return target
            }
        }

        func parsedPaths() throws -> [BenchPath] {
            guard let names = list(paths) else { return BenchPath.allCases }
            return try names.map { name in
                guard let path = BenchPath(rawValue: name) else {
                    throw ValidationError("Unknown path '\(name)'; use \(BenchPath.allCases.map(\.rawValue).joined(separator: ", ")).")
                }
                return path
            }
        }

        /// The comma-separated items of `text`, lowercased; nil when the option was not given.
        private func list(_ text: String?) -> [String]? {
            text.map { $0.lowercased().split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty } }
        }
    }
}
