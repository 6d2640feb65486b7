import FFmpegSupport

/// The libavfilter stage between a video decoder and the fitting: deinterlacing (bwdif),
/// HDR-to-SDR tone mapping (zscale and tonemap) and burnt-in subtitles (text by libass, bitmaps by
/// `BitmapSubtitleBurner` after the graph), on the CPU. Pictures that need none of these pass
/// straight through, surfaces included; those that need one are downloaded from the device first,
/// except surfaces that only need deinterlacing where the device's video processor deinterlaces
/// by bob (`deviceDeinterlaces`): those are deinterlaced there by `deinterlace_vaapi`, one
/// picture out per picture in as bwdif's `send_frame` gives, and stay surfaces. Bitmap
/// subtitles are drawn over surfaces by the video processor of `subtitleDevice`, where it is given.
///
/// The graph is chosen from the pictures themselves (a picture flagged interlaced, a transfer
/// of PQ or HLG) and the stream's field order, and rebuilt, after draining the old one, when
/// the pictures change size or format or interlacing first appears mid-stream.
final class PictureFilters {
    let loop: DecodeLoop
    let stream: StreamInfo
    let attributes: PixelBufferAttributes
    let outputFormat: PixelFormatID
    private let observations: StageObservations?
    private var graph: FilterGraph?
    /// Filtered pictures drained from a graph being replaced, handed out first.
    private var ready: [Frame] = []
    private var decoderEnded = false
    /// Set once a picture flagged interlaced has been seen: deinterlacing stays on from then.
    private var sawInterlacedFrame = false
    /// Surfaces that need only deinterlacing are deinterlaced by the device's video processor.
    let deviceDeinterlaces: Bool
    /// The text subtitles drawn into every picture: the file, and the track's number among its subtitle streams.
    let subtitles: (path: String, index: Int)?
    /// The bitmap subtitle track drawn into every picture, once the graph has made it 4:2:0.
    let bitmapSubtitles: SubtitleBurnIn?
    /// Draws `bitmapSubtitles`: opened on the first picture, on this stage's thread.
    private var bitmapBurner: BitmapSubtitleBurner?
    /// The device whose video processor draws `bitmapSubtitles` over surfaces, which then stay
    /// surfaces; nil downloads them to blend the subtitles in host memory.
    let subtitleDevice: SubtitleLayerDevice?

    init(loop: DecodeLoop, stream: StreamInfo, attributes: PixelBufferAttributes, subtitles: (path: String, index: Int)? = nil,
         bitmapSubtitles: SubtitleBurnIn? = nil, subtitleDevice: SubtitleLayerDevice? = nil, outputFormat: PixelFormatID,
         observations: StageObservations?, deviceDeinterlaces: Bool = false) {
        self.subtitles = subtitles
        self.bitmapSubtitles = bitmapSubtitles
        self.subtitleDevice = bitmapSubtitles == nil ? nil : subtitleDevice
        self.loop = loop
        self.stream = stream
        self.attributes = attributes
        self.outputFormat = outputFormat
        self.observations = observations
        self.deviceDeinterlaces = deviceDeinterlaces
    }

    /// What went wrong drawing the bitmap subtitles, in words; nil when nothing did.
    var subtitleDamageReport: String? { bitmapBurner?.damageReport }

    /// The next picture, filtered where it needs it and with the bitmap subtitles on screen at
    /// its time drawn in; nil at the end of the stream.
    func next() throws(MediaError) -> Frame? {
        guard let picture = try filtered() else { return nil }
        guard let bitmapSubtitles else { return picture }
        let microseconds = Rational(1, 1_000_000)
        let time = stream.timeBase.rescale(picture.bestEffortTimestamp ?? picture.pts ?? 0, to: microseconds)
        if bitmapBurner == nil {
            bitmapBurner = try BitmapSubtitleBurner(path: bitmapSubtitles.path, streamIndex: bitmapSubtitles.streamIndex,
                                                    seekStream: stream.index, firstPicture: time)
        }
        guard let burner = bitmapBurner else { return picture }
        if picture.surfaceSoftwareFormat != nil, let subtitleDevice { return try burner.draw(over: picture, at: time, on: subtitleDevice) }
        try burner.draw(into: picture, at: time)
        return picture
    }

    /// The next picture out of the decoder and the graph; nil at the end of the stream.
    private func filtered() throws(MediaError) -> Frame? {
        while true {
            if !ready.isEmpty { return ready.removeFirst() }
            if let graph {
                switch try pull(graph) {
                case .frame(let frame): return frame
                case .endOfStream: return nil
                case .needsInput: break
                }
            }
            guard let decoded = try loop.nextFrame() else {
                guard let graph, !decoderEnded else { return nil }
                decoderEnded = true
                do { try graph.pushEndOfStream() } catch { throw failure(error, graph.description) }
                continue
            }
            observations?.decoded(on: decoded.surfaceSoftwareFormat == nil ? .host : .device)
            if decoded.isInterlaced { sawInterlacedFrame = true }
            if let description = deviceChain(for: decoded) {
                observations?.deinterlaced(on: .device)
                try push(decoded, description: description)
                continue
            }
            guard let description = chain(for: decoded) else {
                try drain()
                guard !ready.isEmpty else { return decoded }
                ready.append(decoded)
                continue
            }
            if deinterlacing(for: decoded) != nil { observations?.deinterlaced(on: .host) }
            var host = decoded
            if decoded.surfaceSoftwareFormat != nil {
                do { host = try decoded.transferToHost() } catch {
                    throw MediaError(.hardwareFailed, "cannot download a \(decoded.width)x\(decoded.height) surface to filter it",
                                     path: loop.path, underlying: error)
                }
                observations?.transferred(host)
            }
            try push(host, description: description)
        }
    }

    /// Hands `picture` to the graph running `description`, first draining and replacing a graph
    /// built for another chain, size or format. A surface goes to a graph over its own frames context.
    private func push(_ picture: Frame, description: String) throws(MediaError) {
        if let current = graph, current.description != description || current.width != picture.width
            || current.height != picture.height || current.pixelFormat != picture.pixelFormat {
            try drain()
        }
        if graph == nil {
            do {
                graph = picture.surfaceSoftwareFormat != nil
                    ? try FilterGraph(description, surfacesLike: picture, timeBase: stream.timeBase)
                    : try FilterGraph(description, width: picture.width, height: picture.height, pixelFormat: picture.pixelFormat,
                                      timeBase: stream.timeBase, pixelAspect: picture.sampleAspectRatio)
            } catch { throw failure(error, description) }
        }
        do { try graph!.push(picture) } catch { throw failure(error, description) }
    }

    /// `deinterlace_vaapi` for a surface that needs deinterlacing and nothing else, where the
    /// device deinterlaces; nil otherwise. Bob, as the device's own algorithm that reads no
    /// reference picture: FFmpeg 5.1's filter delays its output by the references an algorithm
    /// needs and does not flush them at the end, so a motion-adaptive one would lose pictures.
    /// `rate=frame` gives one picture per frame (the field the frame shows first); `auto=1`
    /// passes pictures not flagged interlaced through, as bwdif's `deint=interlaced` does.
    private func deviceChain(for frame: Frame) -> String? {
        guard deviceDeinterlaces, subtitles == nil, bitmapSubtitles == nil || subtitleDevice != nil, frame.surfaceSoftwareFormat != nil, colorConversion(for: frame) == nil,
              deinterlacing(for: frame) != nil else { return nil }
        if sawInterlacedFrame { return "deinterlace_vaapi=mode=bob:rate=frame:auto=1" }
        // The stream says interlaced and the pictures do not: its field order decides which field is kept.
        frame.isTopFieldFirst = !(stream.fieldOrder == "bb" || stream.fieldOrder == "bt")
        return "deinterlace_vaapi=mode=bob:rate=frame:auto=0"
    }

    /// The filters `frame` needs, nil for none.
    func chain(for frame: Frame) -> String? {
        var filters: [String] = []
        if let deinterlace = deinterlacing(for: frame) { filters.append(deinterlace) }
        if let convert = colorConversion(for: frame) { filters.append(convert) }
        if let subtitles {
            // Drawn at each picture's own time in the file, the time the cues are stored in.
            filters.append("subtitles=filename=\(OverlayRenderer.filterArgument(subtitles.path)):si=\(subtitles.index)")
        }
        if bitmapSubtitles != nil, let layout = bitmapLayout(for: frame, downloaded: !filters.isEmpty) { filters.append(layout) }
        guard !filters.isEmpty else { return nil }
        if let planar = planarInput(for: frame) { filters.insert(planar, at: 0) }
        return filters.joined(separator: ",")
    }

    /// The conversion to the 4:2:0 layout bitmap subtitles are blended into (`yuv420p`, or
    /// `yuv420p10le` for deeper pictures), nil for a host picture already in it and for a surface
    /// the video processor draws over, unless another filter has it `downloaded`. Any other
    /// surface is given one, so that it is downloaded.
    private func bitmapLayout(for frame: Frame, downloaded: Bool) -> String? {
        if frame.surfaceSoftwareFormat != nil, subtitleDevice != nil, !downloaded { return nil }
        let format = frame.surfaceSoftwareFormat ?? frame.pixelFormat
        let deep = (format.bitDepth ?? 8) > 8
        if frame.surfaceSoftwareFormat == nil, ["yuv420p", "yuvj420p", "yuv420p10le"].contains(format.name) { return nil }
        return "format=\(deep ? "yuv420p10le" : "yuv420p")"
    }

    /// The conversion of a downloaded surface's semi-planar layout (NV12, P010), which bwdif and
    /// zscale do not take, to the planar one, keeping its range and saying it: the scaler
    /// libavfilter would insert by itself converts full-range pictures to limited and untags them.
    private func planarInput(for frame: Frame) -> String? {
        let planar: String
        switch (frame.surfaceSoftwareFormat ?? frame.pixelFormat).name {
        case "nv12": planar = "yuv420p"
        case "p010le", "p010be": planar = "yuv420p10le"
        default: return nil
        }
        let range = frame.isFullRange.map { $0 ? "pc" : "tv" } ?? "auto"
        return "scale=in_range=\(range):out_range=\(range),format=\(planar)"
    }

    /// bwdif, when the pictures are interlaced and the output is not kept so.
    ///
    /// `send_frame` gives one picture per frame, so the frame rate, count and timestamps stay
    /// those of the source; `send_field` would double the rate (50i to 50p) and the writer's
    /// settings and the export's frame-rate policy are the source's rate. Pictures flagged as
    /// interlaced are the ones deinterlaced (mixed streams keep their progressive frames
    /// intact); a stream that says it is interlaced but flags no picture has them all done.
    private func deinterlacing(for frame: Frame) -> String? {
        let streamOrder = stream.fieldOrder.flatMap { ["tt", "bb", "tb", "bt"].contains($0) ? $0 : nil }
        guard sawInterlacedFrame || streamOrder != nil else { return nil }
        let resized = (attributes.width.map { $0 != frame.width } ?? false) || (attributes.height.map { $0 != frame.height } ?? false)
        guard attributes.deinterlaces || resized else { return nil }
        if sawInterlacedFrame { return "bwdif=mode=send_frame:parity=auto:deint=interlaced" }
        let parity = streamOrder == "bb" || streamOrder == "bt" ? "bff" : "tff"
        return "bwdif=mode=send_frame:parity=\(parity):deint=all"
    }

    /// zscale (and tonemap) to the asked-for colours, when they differ from the picture's.
    private func colorConversion(for frame: Frame) -> String? {
        guard let target = attributes.colorProperties else { return nil }
        let transfer = frame.colorTransfer ?? stream.colorTransfer
        let primaries = frame.colorPrimaries ?? stream.colorPrimaries
        let matrix = frame.colorMatrix ?? stream.colorMatrix
        guard let transfer, let primaries, let matrix else { return nil }
        // What the picture is, said explicitly: a frame may leave a tag to its stream.
        let input = "tin=\(transfer):pin=\(primaries):min=\(matrix)"
        let deep = (outputFormat.bitDepth ?? 8) > 8
        let format = deep ? "yuv420p10le" : "yuv420p"
        let range = target.fullRange == true ? "pc" : "tv"
        if ColorProperties.isHDR(transfer: transfer), let out = target.transfer, !ColorProperties.isHDR(transfer: out) {
            // To linear light with 100 nits as 1.0, to the output's primaries, Hable's curve
            // with no desaturation, then the output's transfer and matrix (ffmpeg's own recipe).
            return Self.toneMappingChain(input: input, target: target, outputTransfer: out, format: format)
        }
        let differs = (target.transfer.map { $0 != transfer } ?? false) || (target.primaries.map { $0 != primaries } ?? false)
            || (target.matrix.map { $0 != matrix } ?? false)
        guard differs else { return nil }
        return "zscale=\(input):t=\(target.transfer ?? transfer):p=\(target.primaries ?? primaries):m=\(target.matrix ?? matrix):r=\(range),format=\(format)"
    }

    /// The libavfilter chain that tone-maps an HDR picture (`input`: its zscale tags) to
    /// `target`'s colours: to linear light with 100 nits as 1.0, to the target's primaries,
    /// Hable's curve with no desaturation, then the target's transfer, matrix and range (ffmpeg's own recipe).
    static func toneMappingChain(input: String, target: ColorProperties, outputTransfer: String, format: String) -> String {
        let range = target.fullRange == true ? "pc" : "tv"
        return "zscale=\(input):t=linear:npl=100,format=gbrpf32le,zscale=p=\(target.primaries ?? "bt709"),"
            + "tonemap=hable:desat=0,zscale=t=\(outputTransfer):m=\(target.matrix ?? "bt709"):r=\(range),format=\(format)"
    }

    /// Lets the current graph go, keeping the pictures it still held.
    private func drain() throws(MediaError) {
        guard let current = graph else { return }
        graph = nil
        do {
            try current.pushEndOfStream()
            while case .frame(let frame) = try current.pull() { ready.append(frame) }
        } catch { throw failure(error, current.description) }
    }

    private func pull(_ graph: FilterGraph) throws(MediaError) -> FilterGraph.PullResult {
        do { return try graph.pull() } catch { throw failure(error, graph.description) }
    }

    private func failure(_ error: FFmpegError, _ description: String) -> MediaError {
        MediaError(.unsupported, "cannot filter \(stream.codecName) pictures with \(description)", path: loop.path, underlying: error)
    }
}

extension ColorProperties {
    /// True for the HDR transfers: PQ (SMPTE ST 2084) and HLG (ARIB STD-B67).
    public static func isHDR(transfer: String?) -> Bool { transfer == "smpte2084" || transfer == "arib-std-b67" }
}
