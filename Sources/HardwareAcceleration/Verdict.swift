import MediaCore

/// A common transcoding job the probe judges a device against (`H.264 1080p → HEVC`).
public struct TranscodeJob: Codable, Equatable, Sendable {
    /// What the report calls it.
    public var name: String
    /// The source codec, bit depth and size, or `nil` for an encode-only job.
    public var input: Stream?
    /// The target codec and bit depth, or `nil` for a decode-only job.
    public var output: Stream?

    public struct Stream: Codable, Equatable, Sendable {
        public var codec: Codec
        public var bitDepth: Int
        public var size: Size

        public init(codec: Codec, bitDepth: Int, size: Size) {
            self.codec = codec
            self.bitDepth = bitDepth
            self.size = size
        }
    }

    public init(name: String, input: Stream?, output: Stream?) {
        self.name = name
        self.input = input
        self.output = output
    }

    static let p1080 = Size(width: 1920, height: 1080)
    static let p2160 = Size(width: 3840, height: 2160)

    /// The jobs `vaf probe` reports on.
    public static let common: [TranscodeJob] = [
        TranscodeJob(name: "H.264 1080p → H.264", input: .init(codec: .h264, bitDepth: 8, size: p1080),
                     output: .init(codec: .h264, bitDepth: 8, size: p1080)),
        TranscodeJob(name: "H.264 1080p → HEVC", input: .init(codec: .h264, bitDepth: 8, size: p1080),
                     output: .init(codec: .hevc, bitDepth: 8, size: p1080)),
        TranscodeJob(name: "HEVC Main10 2160p → HEVC Main10", input: .init(codec: .hevc, bitDepth: 10, size: p2160),
                     output: .init(codec: .hevc, bitDepth: 10, size: p2160)),
        TranscodeJob(name: "VP9 1080p → H.264", input: .init(codec: .vp9, bitDepth: 8, size: p1080),
                     output: .init(codec: .h264, bitDepth: 8, size: p1080)),
        TranscodeJob(name: "AV1 decode 1080p", input: .init(codec: .av1, bitDepth: 8, size: p1080), output: nil),
        TranscodeJob(name: "AV1 encode", input: nil, output: .init(codec: .av1, bitDepth: 8, size: p1080)),
        TranscodeJob(name: "JPEG decode", input: .init(codec: .jpeg, bitDepth: 8, size: p1080), output: nil),
    ]
}

/// How a job would run on a device, and why.
public struct Verdict: Codable, Equatable, Sendable, CustomStringConvertible {
    /// Where the work runs: an open struct so new kinds of path can be added.
    public struct Path: RawRepresentable, Hashable, Codable, Sendable {
        public var rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }

        /// Decode and encode (or the single step) on the device.
        public static let fullHardware = Path(rawValue: "full-hardware")
        /// Decode on the device, encode in software.
        public static let hardwareDecode = Path(rawValue: "hardware-decode")
        /// Decode in software, encode on the device.
        public static let hardwareEncode = Path(rawValue: "hardware-encode")
        /// Everything in software.
        public static let software = Path(rawValue: "software")
    }

    public var job: String
    public var path: Path
    /// Caveats: low-power-only encoders, size limits exceeded, encoders FFmpeg 5.1 lacks.
    public var notes: [String]

    public var description: String {
        let words: String = switch path {
        case .fullHardware: "full hardware path"
        case .hardwareDecode: "hardware decode, software encode"
        case .hardwareEncode: "software decode, hardware encode"
        case .software: "software"
        default: path.rawValue
        }
        return notes.isEmpty ? "\(job): \(words)" : "\(job): \(words) (\(notes.joined(separator: "; ")))"
    }

    /// The verdict for `job` when there is no usable VA-API device at all.
    public static func softwareOnly(_ job: TranscodeJob) -> Verdict {
        Verdict(job: job.name, path: .software, notes: ["no VA-API device"])
    }
}

extension DeviceCapabilities {
    /// How each of `jobs` would run on this device.
    public func verdicts(for jobs: [TranscodeJob] = TranscodeJob.common) -> [Verdict] {
        let codecs = self.codecs
        return jobs.map { verdict(for: $0, codecs: codecs) }
    }

    private func verdict(for job: TranscodeJob, codecs: [CodecSupport]) -> Verdict {
        var notes: [String] = []
        var decodes = false, encodes = false
        if let input = job.input, let decode = codecs.first(where: { $0.codec == input.codec })?.decode {
            let name = input.codec.displayName
            if !decode.bitDepths.contains(input.bitDepth) {
                notes.append("no \(input.bitDepth)-bit \(name) decode")
            } else if let max = decode.maxSize, !max.fits(input.size) {
                notes.append("\(name) decode limited to \(max)")
            } else {
                // An unreported size limit is the norm (vainfo rarely lists one), not a caveat worth a note.
                decodes = true
            }
        }
        if let input = job.input, codecs.first(where: { $0.codec == input.codec })?.decode == nil {
            notes.append("no \(input.codec.displayName) decode entry point")
        }
        if let output = job.output, codecs.first(where: { $0.codec == output.codec })?.encode == nil {
            notes.append("no \(output.codec.displayName) encode entry point")
        }
        if let output = job.output, let encode = codecs.first(where: { $0.codec == output.codec })?.encode {
            let name = output.codec.displayName
            let entry = encode.lowPower ? "EncSliceLP" : "EncSlice"
            if encode.ffmpegEncoder == nil {
                notes.append("device lists \(name) encode (\(entry)) but FFmpeg 5.1 has no VA-API \(name) encoder")
            } else if !encode.bitDepths.contains(output.bitDepth) {
                notes.append("no \(output.bitDepth)-bit \(name) encode")
            } else if let max = encode.maxSize, !max.fits(output.size) {
                notes.append("\(name) encode limited to \(max)")
            } else {
                encodes = true
                if encode.lowPowerOnly { notes.append("\(name) encode is low-power only: FFmpeg 5.1 needs low_power=1") }
            }
        }
        let path: Verdict.Path = switch (job.input != nil ? decodes : nil, job.output != nil ? encodes : nil) {
        case (true?, true?), (true?, nil), (nil, true?): .fullHardware
        case (true?, false?): .hardwareDecode
        case (false?, true?): .hardwareEncode
        default: .software
        }
        return Verdict(job: job.name, path: path, notes: notes)
    }
}
