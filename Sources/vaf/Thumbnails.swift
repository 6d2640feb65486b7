import ArgumentParser
import Foundation
import VAFoundation
import HardwareAcceleration

extension Vaf {
    /// `vaf thumbnails`: posters, stills at given times and sprite sheets with a WebVTT index.
    struct Thumbnails: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Make still images of video files: posters, stills at given times, sprite sheets with WebVTT.",
            discussion: """
                Times come from one of --at (a list), --every (an interval) or --count (evenly spaced); \
                without any, one poster from the middle. By default each image is the keyframe nearest \
                the time (fast); --exact, and every sprite tile, is the picture on screen at that time. \
                Images are fitted in \
                --size (never upscaled) and turned upright as the file says.

                --sprite COLSxROWS puts the images on sheets of that grid (more sheets when they do not \
                fit); --vtt adds NAME.vtt, whose cues cover the whole duration and point into the sheets \
                with #xywh= fragments, as HTML5 players' thumbnail tracks expect.

                Outputs go to --output-dir as NAME-001.jpg… or NAME-sprite-1.jpg…; they are written to a \
                temporary file and renamed, so no partial image is ever left. With --json, one JSON object \
                per input is printed to stdout as the input ends.

                Exit status: 0 when every input succeeded, 1 when any failed, 64 for a usage error; 130 \
                after Ctrl-C (SIGINT), 143 after SIGTERM, 129 after SIGHUP and 141 when stdout's reader \
                goes away (each stops between images; every input still gets its report).
                """
        )

        @Argument(help: "Video files and directories.")
        var inputs: [String] = []

        @Option(help: ArgumentHelp("Times, comma-separated, in seconds or [HH:]MM:SS(.fff): 5,30,01:30.", valueName: "times"))
        var at: String?

        @Option(help: ArgumentHelp("One image every this many seconds (10 or 10s), from 0.", valueName: "interval"))
        var every: String?

        @Option(help: ArgumentHelp("This many images, evenly spaced over the duration.", valueName: "n"))
        var count: Int?

        @Option(help: ArgumentHelp("Fit images in WxH, keeping their aspect, never upscaled (sprites: default 160x90).", valueName: "WxH"))
        var size: String?

        @Flag(help: "The picture on screen at each time, not the nearest keyframe (slower).")
        var exact = false

        @Option(help: ArgumentHelp("png or jpeg.", valueName: "format"))
        var format: String = "jpeg"

        @Option(help: ArgumentHelp("Where images go.", valueName: "dir"))
        var outputDir: String = "vaf-thumbnails"

        @Option(help: ArgumentHelp("Put the images on sprite sheets of COLSxROWS tiles.", valueName: "COLSxROWS"))
        var sprite: String?

        @Flag(help: "With --sprite, also write NAME.vtt indexing the tiles.")
        var vtt = false

        @Flag(help: "Lay the images out on one contact sheet per input (NAME-contact.jpg): a grid with each image's time, under a line naming the file, its duration and size. Default: 16 images, 320x180 tiles.")
        var contactSheet = false

        @Option(help: ArgumentHelp("Tiles per row of the contact sheet (default 4).", valueName: "n"))
        var columns: Int?

        @Flag(help: "Print one JSON object per input (JSON lines) to stdout.")
        var json = false

        @Option(help: ArgumentHelp("""
            VA-API use: auto (decode and scale on the GPU when there is one, one download per image; \
            software otherwise, and for a device failing mid-input), require (fail without a device), off.
            """, valueName: "mode"))
        var hw: String = "auto"

        @Option(help: ArgumentHelp("VA-API device: a render node (/dev/dri/renderD129) or an X11 display (:0); default the first render node.", valueName: "path"))
        var device: String?

        @Option(help: ArgumentHelp("Inputs processed at once.", valueName: "n"))
        var jobs: Int = 1

        @OptionGroup var logging: LoggingOptions

        /// How the times are chosen.
        enum Schedule {
            case at([MediaTime]), every(MediaTime), count(Int)
        }

        func validate() throws {
            if inputs.isEmpty { throw ValidationError("Give at least one video file or directory.") }
            if [at != nil, every != nil, count != nil].filter({ $0 }).count > 1 {
                throw ValidationError("--at, --every and --count each choose the times; give one of them.")
            }
            _ = try schedule()
            _ = try box()
            _ = try grid()
            guard Image.Format(rawValue: format.lowercased() == "jpg" ? "jpeg" : format.lowercased()) != nil else {
                throw ValidationError("--format takes png or jpeg.")
            }
            if vtt && sprite == nil { throw ValidationError("--vtt indexes sprite sheets: give --sprite COLSxROWS with it.") }
            if contactSheet && sprite != nil { throw ValidationError("--contact-sheet and --sprite each lay out the images: choose one.") }
            if let columns, !contactSheet { throw ValidationError("--columns \(columns) lays out a contact sheet: give --contact-sheet with it.") }
            if let columns, !(1...20).contains(columns) { throw ValidationError("--columns takes 1 to 20.") }
            if jobs < 1 { throw ValidationError("--jobs takes a positive number.") }
            guard [HardwarePolicy.auto, .require, .off].contains(HardwarePolicy(rawValue: hw.lowercased())) else {
                throw ValidationError("--hw takes auto, require or off.")
            }
            if device != nil && hw.lowercased() == "off" { throw ValidationError("--device names a device for --hw auto or require, not --hw off.") }
        }

        func schedule() throws -> Schedule {
            if let at {
                let times = at.split(separator: ",").map { Transcode.parseTime(String($0).trimmingCharacters(in: .whitespaces)) }
                guard !times.isEmpty, let parsed = times as? [MediaTime] else {
                    throw ValidationError("--at takes times separated by commas, in seconds or [HH:]MM:SS(.fff): 5,30,01:30.")
                }
                return .at(parsed)
            }
            if let every {
                let text = every.hasSuffix("s") ? String(every.dropLast()) : every
                guard let interval = Transcode.parseTime(text), interval > .zero else {
                    throw ValidationError("--every takes a positive interval in seconds: 10 or 10s or 2.5.")
                }
                return .every(interval)
            }
            if let count {
                guard (1...10_000).contains(count) else { throw ValidationError("--count takes 1 to 10000.") }
                return .count(count)
            }
            return .count(contactSheet ? 16 : 1)
        }

        func box() throws -> Size? {
            guard let text = size ?? (sprite != nil ? "160x90" : contactSheet ? "320x180" : nil) else { return nil }
            let parts = text.lowercased().split(separator: "x").compactMap { Int($0) }
            guard parts.count == 2, parts[0] > 0, parts[1] > 0, parts[0] <= 16384, parts[1] <= 16384 else {
                throw ValidationError("--size takes WxH in pixels, e.g. 320x180.")
            }
            return Size(width: parts[0], height: parts[1])
        }

        func grid() throws -> (columns: Int, rows: Int)? {
            guard let sprite else { return nil }
            let parts = sprite.lowercased().split(separator: "x").compactMap { Int($0) }
            guard parts.count == 2, (1...100).contains(parts[0]), (1...100).contains(parts[1]) else {
                throw ValidationError("--sprite takes COLSxROWS, e.g. 10x10 (1 to 100 each).")
            }
            return (parts[0], parts[1])
        }

        func run() async throws {
            logging.apply()
            let files: [BatchInput]
            do { files = try InputCollector.collect(inputs, manifests: [], outputDirectory: outputDir) } catch let error as MediaError {
                FileHandle.standardError.write(Data("vaf thumbnails: \(error)\n".utf8))
                throw ExitCode(1)
            }
            do { try FileManager.default.createDirectory(atPath: outputDir, withIntermediateDirectories: true) } catch {
                FileHandle.standardError.write(Data("vaf thumbnails: cannot create the output directory \(outputDir): \(error.localizedDescription)\n".utf8))
                throw ExitCode(1)
            }
            let job = ThumbnailJob(schedule: try schedule(), box: try box(), exact: exact,
                                   format: Image.Format(rawValue: format.lowercased() == "jpg" ? "jpeg" : format.lowercased())!,
                                   grid: try grid(), writesVTT: vtt, outputDirectory: URL(fileURLWithPath: outputDir),
                                   contactSheetColumns: contactSheet ? (columns ?? 4) : nil,
                                   hardware: HardwarePolicy(rawValue: hw.lowercased()) ?? .auto, device: device)
            // SIGINT, SIGTERM, SIGHUP and a closed stdout cancel the batch: the input in hand stops
            // between images, the rest are not started, and each still gets its report.
            let (reports, signal) = await BatchRunner.cancellingOnSignals(Task { [jobs, json] in
                await BatchRunner.runEach(Array(files.enumerated()), concurrency: jobs) { numbered in
                    await job.run(numbered.element, index: numbered.offset, among: files)
                } ended: { report in
                    report.print(json: json)
                } unstarted: { numbered in
                    let report = ThumbnailReport(input: numbered.element.path, status: "cancelled", error: "interrupted before it started")
                    report.print(json: json)
                    return report
                }
            })
            // 128 + the signal, as `vaf transcode` exits: 130 SIGINT, 143 SIGTERM, 129 SIGHUP, 141 SIGPIPE.
            if let signal { throw ExitCode(128 + signal) }
            let failed = reports.filter { $0.status == "failed" }.count
            if failed > 0 { throw ExitCode(1) }
        }
    }
}

/// What one input produced, printed as it ends.
struct ThumbnailReport: Encodable, Sendable {
    struct Still: Encodable, Sendable {
        var path: String
        var requestedTime: Double
        var actualTime: Double
    }

    var schemaVersion = 1
    var input: String
    var status: String
    var images: [Still] = []
    var sprites: [String] = []
    var vtt: String?
    var contactSheet: String?
    var error: String?

    func print(json: Bool) {
        if json {
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
            if let data = try? encoder.encode(self) { StandardOutput.write(data + Data("\n".utf8)) }
        } else if let error {
            // An error about the input names it already ("PATH: cause").
            let names = [input, URL(fileURLWithPath: input).standardizedFileURL.path]
            let line = names.contains { error.hasPrefix($0 + ": ") } ? error : "\(input): \(error)"
            FileHandle.standardError.write(Data("\(JobReport.oneLine(line))\n".utf8))
        } else {
            let sheets = sprites.isEmpty ? "\(images.count) image\(images.count == 1 ? "" : "s")"
                : "\(images.count) tiles on \(sprites.count) sheet\(sprites.count == 1 ? "" : "s")" + (vtt.map { " and \($0)" } ?? "")
            let made = contactSheet.map { "\(images.count) images on \($0)" } ?? sheets
            StandardOutput.write(Data("\(JobReport.oneLine(input)): \(made)\n".utf8))
        }
    }
}

/// The thumbnails of one input, with the settings shared by the batch.
struct ThumbnailJob: Sendable {
    var schedule: Vaf.Thumbnails.Schedule
    var box: Size?
    var exact: Bool
    var format: Image.Format
    var grid: (columns: Int, rows: Int)?
    var writesVTT: Bool
    var outputDirectory: URL
    /// Set for a contact sheet: its tiles per row.
    var contactSheetColumns: Int?
    /// Whether pictures are decoded and scaled on a VA-API device (auto, require or off), and which.
    var hardware: HardwarePolicy = .off
    var device: String?

    /// The device images are made on, nil for the CPU; under `require`, its absence is the input's error.
    func videoDevice(for path: String) throws(MediaError) -> VADevice? {
        guard hardware != .off else { return nil }
        do { return try VADevice.shared(device) } catch {
            if hardware == .require { throw MediaError(.hardwareFailed, "--hw require: \(error.message)", path: path) }
            return nil
        }
    }

    func run(_ input: BatchInput, index: Int, among all: [BatchInput]) async -> ThumbnailReport {
        var report = ThumbnailReport(input: input.path, status: "completed")
        do {
            let asset = Asset(url: URL(fileURLWithPath: input.path))
            let duration = try await asset.load(.duration)
            guard duration > .zero else { throw MediaError(.corruptOrTruncated, "the file has no duration to take images from", path: input.path) }
            let times = Self.times(schedule, duration: duration)
            // Same-named inputs from different folders get the folder in the name.
            let base = Self.baseName(input, among: all)
            // Images that a run killed outright (SIGKILL) left half written for this input go.
            for stale in AssetWriter.removeStalePartialFiles(in: outputDirectory, where: { $0.hasPrefix(base + "-") || $0 == base + ".vtt" }) {
                FileHandle.standardError.write(Data("vaf: removed \(stale.path), a partial file whose writer is gone\n".utf8))
            }
            let device = try videoDevice(for: input.path)
            var images: [(Image, MediaTime, MediaTime)]
            do { images = try await stills(of: asset, at: times, on: device) } catch let error as MediaError where error.code == .hardwareFailed && hardware == .auto {
                // A device failing mid-input: the images are made again on the CPU.
                images = try await stills(of: asset, at: times, on: nil)
            }
            // A cancelled generator ends its images early: none of them is written.
            try Task.checkCancellation()
            if let columns = contactSheetColumns {
                let tracks = try await asset.load(.tracks)
                let video = ExportSession.primaryVideoTrack(tracks)
                let header = "\(URL(fileURLWithPath: input.path).lastPathComponent)   \(Self.clock(duration))   "
                    + (video.map { "\(Int($0.displaySize.width))x\(Int($0.displaySize.height)) \($0.formatDescription.codec)" } ?? "")
                try writeContactSheet(images, columns: columns, header: header, base: base, into: &report)
            } else if let grid {
                try writeSprites(images, duration: duration, grid: grid, base: base, into: &report)
            } else {
                for (i, (image, requested, actual)) in images.enumerated() {
                    try Task.checkCancellation()
                    let url = outputDirectory.appendingPathComponent(String(format: "%@-%03d.%@", base, i + 1, format.fileExtension))
                    try image.write(to: url, as: format)
                    report.images.append(.init(path: url.path, requestedTime: requested.seconds, actualTime: actual.seconds))
                }
            }
        } catch is CancellationError {
            report.status = "cancelled"
            report.error = "interrupted"
        } catch {
            report.status = Task.isCancelled ? "cancelled" : "failed"
            report.error = (error as? MediaError).map { "\($0)" } ?? "\(error)"
        }
        return report
    }

    /// The images at `times`, each with its requested and actual time, on `device` or the CPU.
    private func stills(of asset: Asset, at times: [MediaTime], on device: VADevice?) async throws -> [(Image, MediaTime, MediaTime)] {
        let generator = AssetImageGenerator(asset: asset)
        generator.appliesPreferredTrackTransform = true
        generator.maximumSize = box
        generator.hardwareDevice = device
        // Tiles sit next to each other in time: each must be its own picture, not the
        // nearest keyframe again.
        if exact || grid != nil || contactSheetColumns != nil {
            generator.requestedTimeToleranceBefore = .zero
            generator.requestedTimeToleranceAfter = .zero
        }
        var images: [(Image, MediaTime, MediaTime)] = []
        for await result in generator.images(for: times) {
            switch result {
            case .success(let requested, let image, let actual): images.append((image, requested, actual))
            case .failure(_, let error): throw error
            }
        }
        return images
    }

    /// The requested times within `duration`.
    static func times(_ schedule: Vaf.Thumbnails.Schedule, duration: MediaTime) -> [MediaTime] {
        switch schedule {
        case .at(let times):
            return times.map { min($0, duration) }
        case .every(let interval):
            var times: [MediaTime] = []
            var t = MediaTime.zero
            while t < duration && times.count < 100_000 {
                times.append(t)
                t = t + interval
            }
            return times
        case .count(let n):
            // The middle of each of n equal parts.
            return (0..<n).map { i in duration.multiplied(by: Int32(2 * i + 1), dividedBy: Int32(2 * n)) }
        }
    }

    static func baseName(_ input: BatchInput, among all: [BatchInput]) -> String {
        let url = URL(fileURLWithPath: input.path)
        let name = url.deletingPathExtension().lastPathComponent
        let clashes = all.filter { URL(fileURLWithPath: $0.path).deletingPathExtension().lastPathComponent == name }.count > 1
        let folder = url.deletingLastPathComponent().lastPathComponent
        return OutputNamer.clean(clashes ? "\(folder)_\(name)" : name)
    }

    /// Sheets of `grid` tiles and, when asked, a WebVTT index whose cues cover the duration.
    private func writeSprites(_ stills: [(image: Image, requested: MediaTime, actual: MediaTime)], duration: MediaTime,
                              grid: (columns: Int, rows: Int), base: String, into report: inout ThumbnailReport) throws {
        let images = stills.map(\.image), times = stills.map(\.requested)
        guard let first = images.first else { return }
        let (tileWidth, tileHeight) = (first.width, first.height)
        let perSheet = grid.columns * grid.rows
        var cues: [String] = []
        for sheetIndex in 0..<((images.count + perSheet - 1) / perSheet) {
            let tiles = Array(images[(sheetIndex * perSheet)..<min(images.count, (sheetIndex + 1) * perSheet)])
            let columns = min(grid.columns, tiles.count)
            let rows = (tiles.count + grid.columns - 1) / grid.columns
            var pixels = [UInt8](repeating: 0, count: columns * tileWidth * rows * tileHeight * 3)
            let stride = columns * tileWidth * 3
            for (i, tile) in tiles.enumerated() {
                let (x, y) = ((i % grid.columns) * tileWidth, (i / grid.columns) * tileHeight)
                // A tile of another size (a resolution change) is centred, cropped to the cell.
                let (w, h) = (min(tile.width, tileWidth), min(tile.height, tileHeight))
                let (dx, dy) = ((tileWidth - w) / 2, (tileHeight - h) / 2)
                for row in 0..<h {
                    let from = row * tile.width * 3
                    let to = (y + dy + row) * stride + (x + dx) * 3
                    pixels.replaceSubrange(to..<(to + w * 3), with: tile.pixels[from..<(from + w * 3)])
                }
            }
            let sheet = try Image(width: columns * tileWidth, height: rows * tileHeight, pixels: pixels)
            let name = "\(base)-sprite-\(sheetIndex + 1).\(format.fileExtension)"
            let url = outputDirectory.appendingPathComponent(name)
            try sheet.write(to: url, as: format)
            report.sprites.append(url.path)
            for (i, _) in tiles.enumerated() {
                let n = sheetIndex * perSheet + i
                // Cue boundaries halfway between the tiles' times; the first starts at 0, the last
                // ends at the duration, so the cues cover it without gaps.
                let start = n == 0 ? MediaTime.zero : Self.midpoint(times[n - 1], times[n])
                let end = n == images.count - 1 ? duration : Self.midpoint(times[n], times[n + 1])
                let (x, y) = ((i % grid.columns) * tileWidth, (i / grid.columns) * tileHeight)
                cues.append("\(Self.vttTime(start)) --> \(Self.vttTime(end))\n\(name)#xywh=\(x),\(y),\(tileWidth),\(tileHeight)")
            }
        }
        report.images = stills.enumerated().map { n, still in
            .init(path: report.sprites[n / perSheet], requestedTime: still.requested.seconds, actualTime: still.actual.seconds)
        }
        guard writesVTT else { return }
        let url = outputDirectory.appendingPathComponent("\(base).vtt")
        let text = "WEBVTT\n\n" + cues.joined(separator: "\n\n") + "\n"
        do throws(MediaError) { try OutputFile.write(Data(text.utf8), to: url) } catch {
            throw MediaError(error.code, "cannot write the WebVTT index: \(error.message)", path: url.path)
        }
        report.vtt = url.path
    }

    /// One sheet: a header line, then the images in rows of `columns`, each with its time in
    /// its bottom-left corner, on a dark grey ground with a gap between tiles.
    private func writeContactSheet(_ stills: [(image: Image, requested: MediaTime, actual: MediaTime)], columns: Int, header: String,
                                   base: String, into report: inout ThumbnailReport) throws {
        guard let first = stills.first?.image else { return }
        let (tileWidth, tileHeight) = (first.width, first.height)
        let gap = 8, headerHeight = 32
        let columns = min(columns, stills.count)
        let rows = (stills.count + columns - 1) / columns
        let (width, height) = (gap + columns * (tileWidth + gap), headerHeight + gap + rows * (tileHeight + gap))
        var pixels = [UInt8](repeating: 32, count: width * height * 3)
        for (i, still) in stills.enumerated() {
            let tile = try still.image.drawingText(Self.clock(still.actual), x: 4, y: max(0, still.image.height - 22), size: 14)
            let (x, y) = (gap + (i % columns) * (tileWidth + gap), headerHeight + gap + (i / columns) * (tileHeight + gap))
            // A tile of another size (a resolution change) is centred, cropped to the cell.
            let (w, h) = (min(tile.width, tileWidth), min(tile.height, tileHeight))
            let (dx, dy) = ((tileWidth - w) / 2, (tileHeight - h) / 2)
            for row in 0..<h {
                let from = row * tile.width * 3
                let to = ((y + dy + row) * width + x + dx) * 3
                pixels.replaceSubrange(to..<(to + w * 3), with: tile.pixels[from..<(from + w * 3)])
            }
        }
        let sheet = try Image(width: width, height: height, pixels: pixels).drawingText(header, x: gap, y: 6, size: 16, backing: nil)
        let url = outputDirectory.appendingPathComponent("\(base)-contact.\(format.fileExtension)")
        try sheet.write(to: url, as: format)
        report.contactSheet = url.path
        report.images = stills.map { .init(path: url.path, requestedTime: $0.requested.seconds, actualTime: $0.actual.seconds) }
    }

    /// `H:MM:SS` (or `M:SS` under an hour), as contact sheets print times.
    static func clock(_ t: MediaTime) -> String {
        let s = max(0, t.convertScale(1, rounding: .roundTowardZero).value)
        return s >= 3600 ? String(format: "%lld:%02lld:%02lld", s / 3600, s / 60 % 60, s % 60) : String(format: "%lld:%02lld", s / 60, s % 60)
    }

    private static func midpoint(_ a: MediaTime, _ b: MediaTime) -> MediaTime { (a + b).multiplied(by: 1, dividedBy: 2) }

    /// `HH:MM:SS.mmm`, as WebVTT writes times (milliseconds, truncated).
    static func vttTime(_ t: MediaTime) -> String {
        let ms = max(0, t.convertScale(1000, rounding: .roundTowardZero).value)
        return String(format: "%02lld:%02lld:%02lld.%03lld", ms / 3_600_000, ms / 60_000 % 60, ms / 1000 % 60, ms % 1000)
    }
}
