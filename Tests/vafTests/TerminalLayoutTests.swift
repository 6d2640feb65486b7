import Foundation
import Testing
@testable import vaf

/// The progress and summary lines at common terminal widths: no line may reach the last
/// column (it would wrap, and a redraw moving up one row per line would leave stale bars),
/// and the numbers stay while the names give way.
@Suite struct TerminalLayoutTests {
    static let widths = [40, 80, 120]
    static let longName = "holiday-at-the-seaside-with-the-whole-family-2024-07-04.mp4"

    private func fits(_ text: String, _ width: Int) -> Bool {
        text.split(separator: "\n", omittingEmptySubsequences: false).allSatisfy { TerminalText.width(String($0)) < width }
    }

    @Test func theWidthComesFromTheTerminalThenColumnsThen80() {
        #expect(TerminalWidth.resolve(terminalColumns: 132, columnsVariable: "100") == 132)
        #expect(TerminalWidth.resolve(terminalColumns: nil, columnsVariable: "100") == 100)
        #expect(TerminalWidth.resolve(terminalColumns: nil, columnsVariable: "wide") == 80)
        #expect(TerminalWidth.resolve(terminalColumns: 0, columnsVariable: nil) == 80)
    }

    @Test func widthsCountWideCharactersTwiceAndMarksNotAtAll() {
        #expect(TerminalText.width("clip.mp4") == 8)
        #expect(TerminalText.width("旅行.mp4") == 8)
        #expect(TerminalText.width("e\u{301}") == 1)
        #expect(TerminalText.width("█░…→") == 4)
    }

    @Test func elidingKeepsTheStartAndTheExtension() {
        let cut = TerminalText.elided(Self.longName, to: 20)
        #expect(TerminalText.width(cut) == 20 && cut.hasPrefix("holiday-") && cut.hasSuffix("07-04.mp4") && cut.contains("…"), "\(cut)")
        #expect(TerminalText.elided("short.mp4", to: 20) == "short.mp4")
        #expect(TerminalText.width(TerminalText.elided("旅行の写真とビデオ.mp4", to: 11)) <= 11)
    }

    @Test func clocksAreMinutesAndSeconds() {
        #expect(TerminalText.clock(0) == "00:00")
        #expect(TerminalText.clock(65.4) == "01:05")
        #expect(TerminalText.clock(7508) == "125:08")
    }

    @Test(arguments: widths)
    func barLinesFitAndKeepProgressAndETA(width: Int) {
        let job = ProgressLayout.JobState(name: Self.longName, progress: 0.25, elapsed: 10, mediaSeconds: 60, frameRate: 30)
        let line = ProgressLayout.barLine(job, width: width)
        #expect(TerminalText.width(line) < width, "\(TerminalText.width(line)) columns at \(width): \(line)")
        #expect(line.contains(" 25.0%") && line.contains("ETA 00:30"), "\(line)")
        #expect(line.contains("█") && line.contains("░"), "a bar at \(width) columns: \(line)")
        #expect(line.contains(".mp4"), "the name keeps its extension: \(line)")
        // 25 % of 60 s in 10 s is 1.5 s of media a second: 45 fps.
        if width >= 80 { #expect(line.contains("45.0 fps") && line.contains("1.50x"), "\(line)") }
        if width == 40 { #expect(!line.contains("fps"), "fps gives way first: \(line)") }
    }

    @Test(arguments: widths)
    func plainLinesFitAndHaveNoEscapeCodes(width: Int) {
        let job = ProgressLayout.JobState(name: Self.longName, progress: 0.5, elapsed: 4, mediaSeconds: 8, frameRate: 25)
        let line = ProgressLayout.plainLine(job, width: width)
        #expect(TerminalText.width(line) < width && !line.contains("\u{1B}") && !line.contains("█"), "\(line)")
        #expect(line.hasSuffix(width >= 80 ? "50.0%, 25.0 fps, 1.00x, ETA 00:04" : "50.0%, 1.00x, ETA 00:04"), "fps gives way first: \(line)")
        #expect(line.hasPrefix("holiday") && line.contains(".mp4:"), "\(line)")
    }

    @Test(arguments: widths)
    func theBatchLineSaysDoneFailedElapsedAndETA(width: Int) {
        let line = ProgressLayout.batchLine(done: 3, total: 6, failed: 1, elapsed: 65, remaining: 130, width: width)
        #expect(TerminalText.width(line) < width, "\(line)")
        if width >= 80 {
            #expect(line == "3 of 6 done, 1 failed, elapsed 01:05, ETA 02:10")
        } else {
            #expect(line == "3/6 done, 1 failed, 01:05, ETA 02:10")
        }
        #expect(ProgressLayout.batchLine(done: 0, total: 6, failed: 0, elapsed: 1, remaining: nil, width: width).contains("ETA --:--"))
    }

    @Test func theBatchETACountsRunningInputsByTheirProgress() throws {
        // 1 finished and one half done of 4: 1.5/4 of the work in 30 s leaves 50 s.
        let remaining = try #require(ProgressLayout.batchRemaining(finished: 1, total: 4, runningProgress: [0.5, 0], elapsed: 30))
        #expect(abs(remaining - 50) < 1e-9)
        #expect(ProgressLayout.batchRemaining(finished: 0, total: 4, runningProgress: [0], elapsed: 30) == nil)
        #expect(ProgressLayout.batchRemaining(finished: 4, total: 4, runningProgress: [], elapsed: 30) == 0)
    }

    static func reports() -> [JobReport] {
        var done = JobReport(input: "/in/\(longName)", output: "/out/\(longName)", status: .completed, preset: "1280x720", inputBytes: 145_000)
        done.seconds = 3
        done.outputBytes = 138_000
        done.speed = 2.5
        let failed = JobReport(input: "/in/broken.mov", output: "/out/broken.mp4", status: .failed, preset: "1280x720", inputBytes: 11)
            .failing("/in/broken.mov: cannot open: Invalid data found when processing input (avformat_open_input)")
        return [done, failed]
    }

    @Test(arguments: widths)
    func theSummaryFitsAndKeepsItsNumbers(width: Int) {
        let table = JobReport.table(Self.reports(), width: width)
        #expect(fits(table, width), "\(width) columns:\n\(table)")
        #expect(table.contains("3.00 s") && table.contains("145 KB → 138 KB") && table.contains("2.5x") && table.contains("completed"), "\(table)")
        #expect(table.contains("holiday-") && table.contains(".mp4"), "the name is elided, not dropped: \(table)")
        // The failure's cause is wrapped, never cut.
        let words = table.split(whereSeparator: { $0 == " " || $0 == "\n" })
        for word in ["/in/broken.mov:", "cannot", "open:", "Invalid", "(avformat_open_input)"] {
            #expect(words.contains(Substring(word)), "\(word) at \(width) columns:\n\(table)")
        }
        #expect(table.hasSuffix("2 inputs: 1 completed, 1 failed\n"), "\(table)")
        if width >= 80 { #expect(table.hasPrefix("input "), "a table with a header at \(width) columns") }
    }

    @Test func atWideTerminalsTheNamesShowInFull() {
        let table = JobReport.table(Self.reports(), width: 200)
        #expect(table.contains("holiday-at-the-seaside-with-the-w"), "\(table)")
        #expect(table.split(separator: "\n")[1].hasPrefix("holiday-at-the-seaside-with-the-w"))
    }
}
