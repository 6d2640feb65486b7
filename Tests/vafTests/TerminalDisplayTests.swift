import ChildProcess
import Foundation
import Testing

/// `vaf transcode` in a real terminal: a detached tmux session of 80 and of 120 columns. The
/// capture joins wrapped lines (`-J`) and includes the history (`-S -`), so a line that wrapped
/// shows as longer than the width and a bar a redraw failed to erase is still there to find.
@Suite(.serialized, .enabled(if: ChildProcess.which("tmux") != nil, "tmux is not installed (Hardware/setup.sh installs it)"))
struct TerminalDisplayTests {
    @Test(arguments: [80, 120])
    func progressAndSummaryFitTheTerminal(width: Int) async throws {
        let tmux = try #require(ChildProcess.which("tmux"))
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("vaf-tmux-\(UUID().uuidString)")
        let inputs = dir.appendingPathComponent("in")
        try FileManager.default.createDirectory(at: inputs, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let clip = try Data(contentsOf: URL(fileURLWithPath: TranscodeCommandTests.clip))
        for i in 1...4 { try clip.write(to: inputs.appendingPathComponent("a-rather-long-clip-name-from-the-family-holiday-\(i).mp4")) }
        // A server of its own (-L), so the test neither sees nor disturbs anyone's sessions.
        let server = "vaf-test-\(getpid())-\(width)"
        // The batch signals a tmux channel when it ends (a signal sent before the wait starts is
        // kept), so the test waits for it instead of polling the screen.
        let command = "'\(Vaf.binary)' transcode '\(inputs.path)' --preset 640x480 --output-dir '\(dir.appendingPathComponent("out").path)' --jobs 2; "
            + "echo VAF-EXIT=$?; '\(tmux)' -L \(server) wait-for -S vaf-done; sleep 600"
        let started = try await ChildProcess.run(tmux, ["-L", server, "-f", "/dev/null", "new-session", "-d", "-x", "\(width)", "-y", "30", command], timeLimit: 60)
        try #require(started.succeeded, "tmux new-session: \(started.stderr)")
        let screen: String
        do {
            let ended = try await ChildProcess.run(tmux, ["-L", server, "wait-for", "vaf-done"], timeLimit: 600)
            let capture = try await ChildProcess.run(tmux, ["-L", server, "capture-pane", "-p", "-J", "-S", "-"], timeLimit: 60)
            try #require(ended.succeeded && capture.succeeded, "tmux wait-for: \(ended.stderr); capture-pane: \(capture.stderr)")
            screen = capture.stdout
        } catch {
            _ = try? await ChildProcess.run(tmux, ["-L", server, "kill-server"], timeLimit: 30)
            throw error
        }
        _ = try? await ChildProcess.run(tmux, ["-L", server, "kill-server"], timeLimit: 30)
        let lines = screen.split(separator: "\n").map(String.init)
        #expect(lines.contains("VAF-EXIT=0"), "the batch ended and succeeded:\n\(screen)")
        #expect(lines.contains("4 inputs: 4 completed"), "the summary is there:\n\(screen)")
        #expect(lines.contains { $0.hasPrefix("input ") && $0.contains("status") }, "the summary's header:\n\(screen)")
        for line in lines {
            #expect(line.count < width, "\(line.count) columns in a \(width)-column terminal: \(line)")
        }
        #expect(!screen.contains("█") && !screen.contains("░"), "no stale progress bar left behind:\n\(screen)")
        #expect(!screen.contains("\u{1B}"), "no escape code shows as text")
    }
}
