import Testing
@testable import VAFoundation

/// An ASS or SSA event's place on the picture, read as libass reads it, as WebVTT cue settings.
@Suite
struct ASSPlacementTests {
    static let header = """
        [Script Info]
        PlayResX: 1920
        PlayResY: 1080

        [V4+ Styles]
        Format: Name, Fontname, Fontsize, Alignment, MarginL
        Style: Default,Arial,48,2,20
        Style: Top Right,Arial,48,9,20
        """

    @Test func theCanvasAndTheStylesComeFromTheHeader() {
        let script = ASSPlacement.script(header: Self.header)
        #expect(script == ASSPlacement.Script(width: 1920, height: 1080, alignments: ["Default": 2, "Top Right": 9]))
        // libass's canvas where the script gives none, or one side.
        #expect(ASSPlacement.script(header: "[Script Info]\n").width == 384)
        #expect(ASSPlacement.script(header: "[Script Info]\nPlayResY: 1024\n").width == 1280)
        #expect(ASSPlacement.script(header: "[Script Info]\nPlayResX: 640\n").height == 480)
        // SSA numbers its alignments 1-3 at the bottom, +4 at the top, +8 in the middle.
        let ssa = ASSPlacement.script(header: "[V4 Styles]\nFormat: Name, Alignment\nStyle: Sign,6\nStyle: Middle,9\nStyle: Low,3\n")
        #expect(ssa.alignments == ["Sign": 8, "Middle": 4, "Low": 3])
    }

    @Test(arguments: [
        ("0,0,Default,,0,0,0,,Plain", ""),
        ("0,0,Top Right,,0,0,0,,From the style", "line:0 align:right"),
        ("0,0,Default,,0,0,0,,{\\an8}Top, with a comma", "line:0"),
        ("0,0,Top Right,,0,0,0,,{\\an1}The first override wins{\\an9}", "align:left"),
        ("0,0,Default,,0,0,0,,{\\a6}Legacy top", "line:0"),
        ("0,0,Default,,0,0,0,,{\\an5\\alpha&H80&}Middle", "line:50%,center"),
        ("0,0,Default,,0,0,0,,{\\pos(480,270)}A quarter in", "line:25%,end position:25%,center align:center"),
        ("0,0,Default,,0,0,0,,{\\an7\\pos(100.5,1200)}Clamped", "line:100%,start position:5.23%,line-left align:left"),
        ("0,0,Default,,0,0,0,,{\\move(1920,540,0,540)}Crawling in from the right", "line:50%,end position:100%,center align:center"),
        ("0,0,Default,,0,0,0,,{\\move(960,1080,960,0,0,500)\\pos(480,270)}The first placement wins", "line:100%,end position:50%,center align:center"),
        ("0,0,Default,,0,0,0,,{\\pos(480,270)\\move(960,1080,960,0)}The first placement wins", "line:25%,end position:25%,center align:center"),
        ("0,0,Default,,0,0,0,,{\\move(10,20,30)}Not a move", ""),
        ("not an event", ""),
    ])
    func anEventIsPlacedByItsOverridesElseItsStyle(event: String, settings: String) {
        #expect(ASSPlacement.cueSettings(event: event, script: ASSPlacement.script(header: Self.header)) == settings)
    }
}
