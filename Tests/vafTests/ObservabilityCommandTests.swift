import ChildProcess
import Foundation
import Testing

/// Completion scripts, `--verbose` and `--quiet`, as README documents them.
@Suite struct ObservabilityCommandTests {
    static func vaf(_ arguments: [String]) async throws -> ChildProcessResult {
        try await ChildProcess.run(Vaf.binary, arguments, timeLimit: 600)
    }

    @Test(arguments: ["bash", "zsh", "fish"])
    func completionScriptsNameEverySubcommand(shell: String) async throws {
        let run = try await Self.vaf(["--generate-completion-script", shell])
        #expect(run.shellStatus == 0, "\(run.stderr)")
        for subcommand in ["info", "probe", "transcode", "package", "verify", "render", "thumbnails", "bench"] {
            #expect(run.stdout.contains(subcommand), "\(shell) script lacks \(subcommand)")
        }
        #expect(run.stdout.contains("time-range") && run.stdout.contains("verbose"), "options of the subcommands too")
    }

    /// The bash script, sourced as README says, completes a subcommand and an option.
    @Test func bashCompletesSubcommandsAndOptions() async throws {
        let script = try await Self.vaf(["--generate-completion-script", "bash"]).stdout
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("vaf-completion-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let file = dir.appendingPathComponent("vaf.bash")
        try Data(script.utf8).write(to: file)
        let complete = """
            source "$1"
            ask() { COMPREPLY=(); COMP_LINE="$*"; COMP_POINT=${#COMP_LINE}; COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1)); _vaf vaf "${@: -1}" "${@: -2:1}"; echo "${COMPREPLY[*]}"; }
            ask vaf tr
            ask vaf transcode --time
            """
        let run = try await ChildProcess.run("/bin/bash", ["-c", complete, "bash", file.path], timeLimit: 60)
        #expect(run.stdout == "transcode\n--time-range\n", "\(run.stdout) \(run.stderr)")
    }

    @Test func verboseLetsFFmpegExplainAndQuietPrintsOnlyErrors() async throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("vaf-logging-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: dir) }
        let clip = TranscodeCommandTests.clip
        let plain = try await Self.vaf(["transcode", clip, "--preset", "640x480", "--output-dir", dir.appendingPathComponent("a").path])
        #expect(plain.shellStatus == 0 && !plain.stderr.contains("[libx264 @"), "FFmpeg is silent by default: \(plain.stderr)")
        let verbose = try await Self.vaf(["transcode", clip, "--preset", "640x480", "--output-dir", dir.appendingPathComponent("b").path, "--verbose"])
        #expect(verbose.shellStatus == 0 && verbose.stderr.contains("[libx264 @"), "x264's own info lines: \(verbose.stderr)")
        let quiet = try await Self.vaf(["transcode", clip, "--preset", "640x480", "--output-dir", dir.appendingPathComponent("c").path, "--quiet"])
        #expect(quiet.shellStatus == 0 && quiet.stderr.isEmpty && quiet.stdout.isEmpty, "\(quiet.stdout) \(quiet.stderr)")

        let broken = dir.appendingPathComponent("broken.mp4")
        try Data("not a movie".utf8).write(to: broken)
        let failing = try await Self.vaf(["transcode", broken.path, "--output-dir", dir.appendingPathComponent("d").path, "--quiet"])
        #expect(failing.shellStatus == 65 && failing.stdout.isEmpty, "\(failing.stdout)")
        let lines = failing.stderr.split(separator: "\n")
        #expect(lines.contains { $0.contains("moov atom not found") }, "FFmpeg's own error: \(failing.stderr)")
        #expect(lines.filter { $0.hasPrefix("vaf: ") } == ["vaf: \(broken.path): not a media file FFmpeg recognises (avformat_open_input: Invalid data found when processing input (-1094995529))"],
                "one line per failure: \(failing.stderr)")

        let both = try await Self.vaf(["transcode", clip, "--verbose", "--quiet"])
        #expect(both.shellStatus == 64 && both.stderr.contains("--verbose") && both.stderr.contains("--quiet"), "\(both.stderr)")
    }
}
