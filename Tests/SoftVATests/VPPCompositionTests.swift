import ChildProcess
import CVA
import Foundation
import Testing
import VATestSupport

/// One layer of a composed picture: one VAProcPipelineParameterBuffer.
struct CompositionLayer {
    var surface: VASurfaceID
    var sourceRegion: VARectangle?
    var outputRegion: VARectangle?
    /// nil: no blend state (the pipeline buffer's pointer is NULL).
    var blend: VABlendState?
    var rotation = UInt32(VA_ROTATION_NONE)
    var mirror = UInt32(VA_MIRROR_NONE)
    /// ARGB; read from the first layer only.
    var background: UInt32 = 0xff00_0000
}

extension LibVASession {
    /// Fills a surface through a vaPutImage of an image in the surface's own format, byte by byte:
    /// `sample(plane, byteInRow, row)` gives each byte of each plane's rows (P010: little-endian words).
    func fill(_ surface: VASurfaceID, width: Int, height: Int, fourcc: UInt32,
              sample: (_ plane: Int, _ byteInRow: Int, _ row: Int) -> UInt8) throws {
        let image = try createImage(width: width, height: height, fourcc: fourcc)
        defer { vaDestroyImage(display, image.image_id) }
        try withMappedImage(image) { p in
            for (index, plane) in planeGeometry(image).enumerated() {
                for row in 0..<plane.rows {
                    let base = p.advanced(by: plane.offset + row * plane.pitch).assumingMemoryBound(to: UInt8.self)
                    for i in 0..<plane.rowBytes { base[i] = sample(index, i, row) }
                }
            }
        }
        try check(vaPutImage(display, surface, image.image_id, 0, 0, UInt32(width), UInt32(height),
                             0, 0, UInt32(width), UInt32(height)), "vaPutImage")
    }

    /// The planes of a surface read back with vaGetImage, each packed (no padding), as
    /// planeGeometry describes them.
    func read(_ surface: VASurfaceID, width: Int, height: Int, fourcc: UInt32) throws -> [[UInt8]] {
        let image = try createImage(width: width, height: height, fourcc: fourcc)
        defer { vaDestroyImage(display, image.image_id) }
        try check(vaGetImage(display, surface, 0, 0, UInt32(width), UInt32(height), image.image_id), "vaGetImage")
        return try withMappedImage(image) { p in
            planeGeometry(image).map { plane in
                (0..<plane.rows).flatMap { row in
                    (0..<plane.rowBytes).map { p.load(fromByteOffset: plane.offset + row * plane.pitch + $0, as: UInt8.self) }
                }
            }
        }
    }

    /// One picture: vaBeginPicture, the layers (all in one vaRenderPicture call, or one call each),
    /// vaEndPicture. Returns vaRenderPicture's or vaEndPicture's status.
    func compose(_ layers: [CompositionLayer], onto target: VASurfaceID, context: VAContextID,
                 oneCallPerLayer: Bool = true) throws -> VAStatus {
        var regions: [UnsafeMutablePointer<VARectangle>] = []
        var blends: [UnsafeMutablePointer<VABlendState>] = []
        defer {
            regions.forEach { $0.deallocate() }
            blends.forEach { $0.deallocate() }
        }
        func pointer(_ r: VARectangle?) -> UnsafePointer<VARectangle>? {
            guard let r else { return nil }
            let p = UnsafeMutablePointer<VARectangle>.allocate(capacity: 1)
            p.initialize(to: r)
            regions.append(p)
            return UnsafePointer(p)
        }
        var buffers: [VABufferID] = []
        defer { buffers.forEach { vaDestroyBuffer(display, $0) } }
        for layer in layers {
            var params = VAProcPipelineParameterBuffer()
            params.surface = layer.surface
            params.surface_region = pointer(layer.sourceRegion)
            params.output_region = pointer(layer.outputRegion)
            params.output_background_color = layer.background
            params.rotation_state = layer.rotation
            params.mirror_state = layer.mirror
            if let blend = layer.blend {
                let p = UnsafeMutablePointer<VABlendState>.allocate(capacity: 1)
                p.initialize(to: blend)
                blends.append(p)
                params.blend_state = UnsafePointer(p)
            }
            var buffer = VABufferID(0)
            try check(vaCreateBuffer(display, context, VAProcPipelineParameterBufferType,
                                     UInt32(MemoryLayout<VAProcPipelineParameterBuffer>.size), 1, &params, &buffer),
                      "vaCreateBuffer")
            buffers.append(buffer)
        }
        try check(vaBeginPicture(display, context, target), "vaBeginPicture")
        var status = VA_STATUS_SUCCESS
        if oneCallPerLayer {
            for i in buffers.indices where status == VA_STATUS_SUCCESS {
                status = vaRenderPicture(display, context, &buffers[i], 1)
            }
        } else {
            status = vaRenderPicture(display, context, &buffers, Int32(buffers.count))
        }
        let end = vaEndPicture(display, context)
        return status != VA_STATUS_SUCCESS ? status : end
    }

    /// A VideoProc config and context for targets of the given size.
    func videoProcContext(width: Int, height: Int, targets: [VASurfaceID]) throws -> (VAConfigID, VAContextID) {
        var config = VAConfigID(0), context = VAContextID(0)
        try check(vaCreateConfig(display, VAProfileNone, VAEntrypointVideoProc, nil, 0, &config), "vaCreateConfig")
        var surfaces = targets
        try check(vaCreateContext(display, config, Int32(width), Int32(height), Int32(VA_PROGRESSIVE), &surfaces,
                                  Int32(surfaces.count), &context), "vaCreateContext")
        return (config, context)
    }
}

func blendState(flags: Int32, globalAlpha: Float = 1) -> VABlendState {
    var state = VABlendState()
    state.flags = UInt32(flags)
    state.global_alpha = globalAlpha
    return state
}

/// BT.601 limited-range Y, Cb, Cr of an 8-bit RGB colour, as SoftVA converts it.
func bt601(_ r: Double, _ g: Double, _ b: Double) -> (y: Double, u: Double, v: Double) {
    let y = 0.299 * r + 0.587 * g + 0.114 * b
    return (16 + y * 219 / 255, 128 + (b - y) / 1.772 * 224 / 255, 128 + (r - y) / 1.402 * 224 / 255)
}

@Suite("VPP composition (several pipeline buffers per picture) on SoftVA", .serialized)
struct VPPCompositionTests {
    static let nv12 = UInt32(VA_FOURCC_NV12), p010 = UInt32(VA_FOURCC_P010), rgba = UInt32(VA_FOURCC_RGBA)
    static let yuv420 = UInt32(VA_RT_FORMAT_YUV420), yuv420p10 = UInt32(VA_RT_FORMAT_YUV420_10)
    static let rgb32 = UInt32(VA_RT_FORMAT_RGB32)

    @Test("vaQueryVideoProcPipelineCaps reports global and premultiplied alpha, the four quarter turns and both mirrors")
    func pipelineCaps() throws {
        let env = try SoftVAEnvironment.start()
        defer { env.stop() }
        let va = try LibVASession(env, options: SoftVAOptions())
        let target = try va.createSurface(width: 64, height: 64, fourcc: Self.nv12, rtFormat: Self.yuv420)
        let (config, context) = try va.videoProcContext(width: 64, height: 64, targets: [target])
        var caps = VAProcPipelineCaps()
        try va.check(vaQueryVideoProcPipelineCaps(va.display, context, nil, 0, &caps), "vaQueryVideoProcPipelineCaps")
        #expect(caps.blend_flags == UInt32(VA_BLEND_GLOBAL_ALPHA | VA_BLEND_PREMULTIPLIED_ALPHA))
        #expect(caps.rotation_flags == 0b1111)
        #expect(caps.mirror_flags == UInt32(VA_MIRROR_HORIZONTAL | VA_MIRROR_VERTICAL))
        #expect(caps.num_additional_outputs == 0)
        vaDestroyContext(va.display, context)
        vaDestroyConfig(va.display, config)
        va.terminate()
    }

    @Test("Eight layers over a background: opaque, 50% global alpha, premultiplied and straight RGBA alpha, global × premultiplied, RGBA without blend state, rotated and mirrored",
          arguments: [true, false])
    func layersBlend(oneCallPerLayer: Bool) throws {
        let env = try SoftVAEnvironment.start()
        defer { env.stop() }
        let tmp = try TemporaryDirectory()
        let va = try LibVASession(env, options: SoftVAOptions(countersPath: tmp.file("counters.txt")))
        let (w, h) = (96, 64)
        let target = try va.createSurface(width: w, height: h, fourcc: Self.nv12, rtFormat: Self.yuv420)
        let grey100 = try va.createSurface(width: 32, height: 32, fourcc: Self.nv12, rtFormat: Self.yuv420)
        try va.fill(grey100, width: 32, height: 32, fourcc: Self.nv12) { plane, _, _ in plane == 0 ? 100 : 128 }
        let grey200 = try va.createSurface(width: 16, height: 16, fourcc: Self.nv12, rtFormat: Self.yuv420)
        try va.fill(grey200, width: 16, height: 16, fourcc: Self.nv12) { plane, _, _ in plane == 0 ? 200 : 128 }
        // Red at alpha 128 in the left half, fully transparent in the right half.
        let premultiplied = try va.createSurface(width: 16, height: 16, fourcc: Self.rgba, rtFormat: Self.rgb32)
        try va.fill(premultiplied, width: 16, height: 16, fourcc: Self.rgba) { _, byte, _ in
            byte / 4 < 8 ? [128, 0, 0, 128][byte % 4] : 0
        }
        let straight = try va.createSurface(width: 16, height: 16, fourcc: Self.rgba, rtFormat: Self.rgb32)
        try va.fill(straight, width: 16, height: 16, fourcc: Self.rgba) { _, byte, _ in
            byte / 4 < 8 ? [255, 0, 0, 128][byte % 4] : [255, 0, 0, 0][byte % 4]
        }
        // luma 20 + 10x + y, for the rotated layers
        let gradient = try va.createSurface(width: 16, height: 8, fourcc: Self.nv12, rtFormat: Self.yuv420)
        try va.fill(gradient, width: 16, height: 8, fourcc: Self.nv12) { plane, byte, row in
            plane == 0 ? UInt8(20 + 10 * byte + row) : 128
        }
        let (config, context) = try va.videoProcContext(width: w, height: h, targets: [target])
        let status = try va.compose([
            // opaque grey 100 in the top-left 32x32, blue background elsewhere
            CompositionLayer(surface: grey100, outputRegion: VARectangle(x: 0, y: 0, width: 32, height: 32),
                             background: 0xff00_00ff),
            // grey 200 scaled to 32x32 at (16, 0), half over the first layer, half over the background
            CompositionLayer(surface: grey200, outputRegion: VARectangle(x: 16, y: 0, width: 32, height: 32),
                             blend: blendState(flags: VA_BLEND_GLOBAL_ALPHA, globalAlpha: 0.5)),
            CompositionLayer(surface: premultiplied, outputRegion: VARectangle(x: 0, y: 32, width: 16, height: 16),
                             blend: blendState(flags: VA_BLEND_PREMULTIPLIED_ALPHA)),
            // a blend state without global or premultiplied alpha on an RGBA layer: straight
            // per-pixel alpha (iHD's BLEND_SOURCE)
            CompositionLayer(surface: straight, outputRegion: VARectangle(x: 32, y: 32, width: 16, height: 16),
                             blend: blendState(flags: 0)),
            // no blend state: the layer replaces, its alpha ignored on a YUV target
            CompositionLayer(surface: straight, outputRegion: VARectangle(x: 80, y: 48, width: 16, height: 16)),
            // a quarter turn at 50%, and 270° then a horizontal mirror, opaque
            CompositionLayer(surface: gradient, outputRegion: VARectangle(x: 48, y: 0, width: 8, height: 16),
                             blend: blendState(flags: VA_BLEND_GLOBAL_ALPHA, globalAlpha: 0.5),
                             rotation: UInt32(VA_ROTATION_90)),
            CompositionLayer(surface: gradient, outputRegion: VARectangle(x: 56, y: 0, width: 8, height: 16),
                             blend: blendState(flags: VA_BLEND_GLOBAL_ALPHA, globalAlpha: 1),
                             rotation: UInt32(VA_ROTATION_270), mirror: UInt32(VA_MIRROR_HORIZONTAL)),
            CompositionLayer(surface: premultiplied, outputRegion: VARectangle(x: 64, y: 32, width: 16, height: 16),
                             blend: blendState(flags: VA_BLEND_GLOBAL_ALPHA | VA_BLEND_PREMULTIPLIED_ALPHA,
                                               globalAlpha: 0.5)),
        ], onto: target, context: context, oneCallPerLayer: oneCallPerLayer)
        #expect(status == VA_STATUS_SUCCESS, "\(String(cString: vaErrorStr(status)))")
        let planes = try va.read(target, width: w, height: h, fourcc: Self.nv12)
        let luma = planes[0], chroma = planes[1]
        func y(_ x: Int, _ yy: Int) -> Double { Double(luma[yy * w + x]) }
        func u(_ x: Int, _ yy: Int) -> Double { Double(chroma[(yy / 2) * w + (x / 2) * 2]) }
        func v(_ x: Int, _ yy: Int) -> Double { Double(chroma[(yy / 2) * w + (x / 2) * 2 + 1]) }
        let blue = bt601(0, 0, 255), red = bt601(255, 0, 0)
        let half = 128.0 / 255.0
        // (what, measured, expected, tolerance)
        let checks: [(String, Double, Double, Double)] = [
            ("background Y", y(90, 4), blue.y, 1), ("background U", u(90, 4), blue.u, 1), ("background V", v(90, 4), blue.v, 1),
            ("opaque layer Y", y(4, 4), 100, 0),
            ("50% of Y=200 over Y=100", y(24, 10), 150, 1), ("50% of neutral chroma over neutral", u(24, 10), 128, 1),
            ("50% of Y=200 over the background", y(40, 10), 0.5 * 200 + 0.5 * blue.y, 1),
            ("50% of neutral U over the background", u(40, 10), 0.5 * 128 + 0.5 * blue.u, 1),
            ("premultiplied red at alpha 128", y(4, 40), half * red.y + (1 - half) * blue.y, 1),
            ("premultiplied red at alpha 128, V", v(4, 40), half * red.v + (1 - half) * blue.v, 1),
            ("premultiplied alpha 0 leaves the background", y(12, 40), blue.y, 1),
            ("straight red at alpha 128", y(36, 40), half * red.y + (1 - half) * blue.y, 1),
            ("straight alpha 0 leaves the background", y(44, 40), blue.y, 1),
            ("global 0.5 × premultiplied alpha 128", y(68, 40), 0.5 * half * red.y + (1 - 0.5 * half) * blue.y, 1),
            ("below the layers: background", y(40, 60), blue.y, 1),
            ("no blend state: opaque red over alpha 128", y(84, 56), red.y, 1),
            ("no blend state: opaque red over alpha 0", y(92, 56), red.y, 1),
            // output (2, 3) of a 90° turn is source (3, 7 - 2); of 270° + horizontal mirror, source (15 - 3, 7 - 2)
            ("90° at 50% over the background", y(50, 3), 0.5 * Double(20 + 30 + 5) + 0.5 * blue.y, 1),
            ("270° then mirrored horizontally", y(58, 3), Double(20 + 120 + 5), 1),
        ]
        for (what, measured, expected, tolerance) in checks {
            #expect(abs(measured - expected) <= tolerance, "\(what): \(measured), expected \(expected) ± \(tolerance)")
        }
        vaDestroyContext(va.display, context)
        vaDestroyConfig(va.display, config)
        va.terminate()
        let c = try SoftVACounters(path: tmp.file("counters.txt"))
        #expect(c["vpp_ops"] == 1)
        #expect(c["vpp_layers"] == 8)
    }

    /// Rotation (clockwise) then mirroring, per va_vpp.h; at 1:1 scale every sample is the source's.
    /// `expected(x, y)` gives the source pixel that lands on output pixel (x, y); the source is 16x8.
    static let orientations: [(String, UInt32, UInt32, @Sendable (Int, Int) -> (Int, Int))] = [
        ("none", UInt32(VA_ROTATION_NONE), UInt32(VA_MIRROR_NONE), { x, y in (x, y) }),
        ("90", UInt32(VA_ROTATION_90), UInt32(VA_MIRROR_NONE), { x, y in (y, 7 - x) }),
        ("180", UInt32(VA_ROTATION_180), UInt32(VA_MIRROR_NONE), { x, y in (15 - x, 7 - y) }),
        ("270", UInt32(VA_ROTATION_270), UInt32(VA_MIRROR_NONE), { x, y in (15 - y, x) }),
        ("mirror horizontal", UInt32(VA_ROTATION_NONE), UInt32(VA_MIRROR_HORIZONTAL), { x, y in (15 - x, y) }),
        ("mirror vertical", UInt32(VA_ROTATION_NONE), UInt32(VA_MIRROR_VERTICAL), { x, y in (x, 7 - y) }),
        // FFmpeg's transpose_vaapi: clock_flip = 90 + vertical mirror, cclock_flip = 270 + vertical mirror
        ("90 then mirror vertical", UInt32(VA_ROTATION_90), UInt32(VA_MIRROR_VERTICAL), { x, y in (15 - y, 7 - x) }),
        ("270 then mirror vertical", UInt32(VA_ROTATION_270), UInt32(VA_MIRROR_VERTICAL), { x, y in (y, x) }),
    ]

    @Test("Quarter turns and mirrors of a 16x8 NV12 region cropped from a 20x14 surface land every luma and chroma sample where VA-API says",
          arguments: 0..<8)
    func orientation(index: Int) throws {
        let (name, rotation, mirror, expected) = Self.orientations[index]
        let env = try SoftVAEnvironment.start()
        defer { env.stop() }
        let va = try LibVASession(env, options: SoftVAOptions())
        let source = try va.createSurface(width: 20, height: 14, fourcc: Self.nv12, rtFormat: Self.yuv420)
        // in the region at (2, 4): luma 20 + 10x + y; chroma U = 40 + 16cx + cy, V = 200 - 16cx - cy
        // (x, y, cx, cy relative to the region)
        try va.fill(source, width: 20, height: 14, fourcc: Self.nv12) { plane, byte, row in
            if plane == 0 { return UInt8(clamping: 20 + 10 * (byte - 2) + (row - 4)) }
            let cx = byte / 2 - 1, cy = row - 2
            return byte % 2 == 0 ? UInt8(clamping: 40 + 16 * cx + cy) : UInt8(clamping: 200 - 16 * cx - cy)
        }
        let region = VARectangle(x: 2, y: 4, width: 16, height: 8)
        let target = try va.createSurface(width: 32, height: 32, fourcc: Self.nv12, rtFormat: Self.yuv420)
        let (config, context) = try va.videoProcContext(width: 32, height: 32, targets: [target])
        let quarter = rotation == UInt32(VA_ROTATION_90) || rotation == UInt32(VA_ROTATION_270)
        let (ow, oh) = quarter ? (8, 16) : (16, 8)
        // placed at (4, 6) over a first layer that paints the target black: a later layer
        let status = try va.compose([
            CompositionLayer(surface: source, outputRegion: VARectangle(x: 0, y: 0, width: 2, height: 2)),
            CompositionLayer(surface: source, sourceRegion: region,
                             outputRegion: VARectangle(x: 4, y: 6, width: UInt16(ow), height: UInt16(oh)),
                             blend: blendState(flags: 0), rotation: rotation, mirror: mirror),
        ], onto: target, context: context)
        #expect(status == VA_STATUS_SUCCESS, "\(name): \(String(cString: vaErrorStr(status)))")
        let planes = try va.read(target, width: 32, height: 32, fourcc: Self.nv12)
        var wrongLuma: [String] = [], wrongChroma: [String] = []
        for y in 0..<oh {
            for x in 0..<ow {
                let (sx, sy) = expected(x, y)
                let got = Int(planes[0][(6 + y) * 32 + 4 + x]), want = 20 + 10 * sx + sy
                if abs(got - want) > 1 { wrongLuma.append("(\(x),\(y)): \(got) ≠ \(want)") }
            }
        }
        // chroma cell (i, j) of the layer covers pixels (2i..2i+1, 2j..2j+1); its source cell holds
        // the source pixels those land on
        for j in 0..<(oh / 2) {
            for i in 0..<(ow / 2) {
                let (sx, sy) = expected(2 * i, 2 * j)
                let (cx, cy) = (sx / 2, sy / 2)
                let at = (3 + j) * 32 + (2 + i) * 2
                let u = Int(planes[1][at]), v = Int(planes[1][at + 1])
                if abs(u - (40 + 16 * cx + cy)) > 1 || abs(v - (200 - 16 * cx - cy)) > 1 {
                    wrongChroma.append("(\(i),\(j)): \(u),\(v) ≠ \(40 + 16 * cx + cy),\(200 - 16 * cx - cy)")
                }
            }
        }
        #expect(wrongLuma.isEmpty, "\(name): \(wrongLuma.prefix(8))")
        #expect(wrongChroma.isEmpty, "\(name): \(wrongChroma.prefix(8))")
        // outside the layer: black from the first layer's background
        #expect(planes[0][31 * 32 + 31] == 16 && planes[0][0 * 32 + 31] == 16)
        vaDestroyContext(va.display, context)
        vaDestroyConfig(va.display, config)
        va.terminate()
    }

    @Test("Quarter turns and mirrors of a 16x8 RGBA layer onto an RGBA target (the full-resolution path) land every pixel where VA-API says",
          arguments: 0..<8)
    func orientationRGBA(index: Int) throws {
        let (name, rotation, mirror, expected) = Self.orientations[index]
        let env = try SoftVAEnvironment.start()
        defer { env.stop() }
        let va = try LibVASession(env, options: SoftVAOptions())
        let source = try va.createSurface(width: 16, height: 8, fourcc: Self.rgba, rtFormat: Self.rgb32)
        // R = 20 + 10x + y, G = 200 - 10x - y, B = 77, A = 3x + 5y (copied: the layer replaces)
        try va.fill(source, width: 16, height: 8, fourcc: Self.rgba) { _, byte, row in
            let x = byte / 4
            return [UInt8(20 + 10 * x + row), UInt8(200 - 10 * x - row), 77, UInt8(3 * x + 5 * row)][byte % 4]
        }
        let target = try va.createSurface(width: 32, height: 32, fourcc: Self.rgba, rtFormat: Self.rgb32)
        let (config, context) = try va.videoProcContext(width: 32, height: 32, targets: [target])
        let quarter = rotation == UInt32(VA_ROTATION_90) || rotation == UInt32(VA_ROTATION_270)
        let (ow, oh) = quarter ? (8, 16) : (16, 8)
        let status = try va.compose([
            CompositionLayer(surface: source, outputRegion: VARectangle(x: 0, y: 0, width: 2, height: 2),
                             background: 0x8000_0000),
            CompositionLayer(surface: source, outputRegion: VARectangle(x: 3, y: 5, width: UInt16(ow), height: UInt16(oh)),
                             rotation: rotation, mirror: mirror),
        ], onto: target, context: context)
        #expect(status == VA_STATUS_SUCCESS, "\(name): \(String(cString: vaErrorStr(status)))")
        let pixels = try va.read(target, width: 32, height: 32, fourcc: Self.rgba)[0]
        var wrong: [String] = []
        for y in 0..<oh {
            for x in 0..<ow {
                let (sx, sy) = expected(x, y)
                let at = ((5 + y) * 32 + 3 + x) * 4
                let got = (0..<4).map { Int(pixels[at + $0]) }
                let want = [20 + 10 * sx + sy, 200 - 10 * sx - sy, 77, 3 * sx + 5 * sy]
                if zip(got, want).contains(where: { abs($0 - $1) > 1 }) { wrong.append("(\(x),\(y)): \(got) ≠ \(want)") }
            }
        }
        #expect(wrong.isEmpty, "\(name): \(wrong.prefix(8))")
        // outside the layer: the background colour, its alpha too
        #expect(Array(pixels[(31 * 32 + 31) * 4..<(31 * 32 + 32) * 4]) == [0, 0, 0, 0x80])
        vaDestroyContext(va.display, context)
        vaDestroyConfig(va.display, config)
        va.terminate()
    }

    @Test("NV12 layer at 50% over a white background on a BGRA target: colour blended in RGB, alpha composited \"over\"")
    func yuvOntoBGRA() throws {
        let env = try SoftVAEnvironment.start()
        defer { env.stop() }
        let va = try LibVASession(env, options: SoftVAOptions())
        let bgra = UInt32(VA_FOURCC_BGRA)
        let target = try va.createSurface(width: 32, height: 32, fourcc: bgra, rtFormat: Self.rgb32)
        let grey = try va.createSurface(width: 16, height: 16, fourcc: Self.nv12, rtFormat: Self.yuv420)
        try va.fill(grey, width: 16, height: 16, fourcc: Self.nv12) { plane, _, _ in plane == 0 ? 126 : 128 }
        let (config, context) = try va.videoProcContext(width: 32, height: 32, targets: [target])
        // a first layer 1x1 in the corner: the half-transparent white background covers the rest
        let status = try va.compose([
            CompositionLayer(surface: grey, outputRegion: VARectangle(x: 0, y: 0, width: 1, height: 1),
                             background: 0x80ff_ffff),
            CompositionLayer(surface: grey, outputRegion: VARectangle(x: 8, y: 8, width: 16, height: 16),
                             blend: blendState(flags: VA_BLEND_GLOBAL_ALPHA, globalAlpha: 0.5)),
        ], onto: target, context: context)
        #expect(status == VA_STATUS_SUCCESS, "\(String(cString: vaErrorStr(status)))")
        let pixels = try va.read(target, width: 32, height: 32, fourcc: bgra)[0]
        let at = (16 * 32 + 16) * 4
        let greyRGB = (126.0 - 16) * 255 / 219 // 128.1
        for c in 0..<3 {
            let value = Double(pixels[at + c])
            #expect(abs(value - (0.5 * greyRGB + 0.5 * 255)) <= 1, "component \(c): \(value)")
        }
        // alpha: 0.5 · 255 + 0.5 · 128
        #expect(abs(Int(pixels[at + 3]) - 192) <= 1, "alpha \(pixels[at + 3])")
        #expect(Array(pixels[(30 * 32 + 30) * 4..<(30 * 32 + 31) * 4]) == [255, 255, 255, 0x80])
        vaDestroyContext(va.display, context)
        vaDestroyConfig(va.display, config)
        va.terminate()
    }

    @Test("P010 target: a 50% NV12 layer over a P010 layer gives the 10-bit midpoint; a layer reaching past the edge is clipped")
    func p010Target() throws {
        let env = try SoftVAEnvironment.start()
        defer { env.stop() }
        let va = try LibVASession(env, options: SoftVAOptions())
        let target = try va.createSurface(width: 64, height: 32, fourcc: Self.p010, rtFormat: Self.yuv420p10)
        let base = try va.createSurface(width: 64, height: 32, fourcc: Self.p010, rtFormat: Self.yuv420p10)
        // 10-bit Y 401 (0x191 << 6 = 0x6440), chroma 512 (0x8000), little-endian words
        try va.fill(base, width: 64, height: 32, fourcc: Self.p010) { plane, byte, _ in
            plane == 0 ? (byte % 2 == 0 ? 0x40 : 0x64) : (byte % 2 == 0 ? 0x00 : 0x80)
        }
        let overlay = try va.createSurface(width: 16, height: 16, fourcc: Self.nv12, rtFormat: Self.yuv420)
        try va.fill(overlay, width: 16, height: 16, fourcc: Self.nv12) { plane, _, _ in plane == 0 ? 200 : 128 }
        let (config, context) = try va.videoProcContext(width: 64, height: 32, targets: [target])
        let status = try va.compose([
            CompositionLayer(surface: base),
            // 32x32 at (48, 8): only 16x24 of it is inside the target
            CompositionLayer(surface: overlay, outputRegion: VARectangle(x: 48, y: 8, width: 32, height: 32),
                             blend: blendState(flags: VA_BLEND_GLOBAL_ALPHA, globalAlpha: 0.5)),
        ], onto: target, context: context)
        #expect(status == VA_STATUS_SUCCESS, "\(String(cString: vaErrorStr(status)))")
        let luma = try va.read(target, width: 64, height: 32, fourcc: Self.p010)[0]
        func sample(_ x: Int, _ y: Int) -> Int {
            let i = (y * 64 + x) * 2
            return (Int(luma[i]) | Int(luma[i + 1]) << 8) >> 6
        }
        // 0.5 · 800 + 0.5 · 401 = 600.5
        #expect(abs(sample(56, 20) - 600) <= 1, "blended: \(sample(56, 20))")
        #expect(abs(sample(63, 31) - 600) <= 1, "blended at the clipped corner: \(sample(63, 31))")
        #expect(sample(40, 20) == 401, "left of the layer: \(sample(40, 20))")
        #expect(sample(56, 4) == 401, "above the layer: \(sample(56, 4))")
        vaDestroyContext(va.display, context)
        vaDestroyConfig(va.display, config)
        va.terminate()
    }

    @Test("Luma keying is refused at vaRenderPicture; SOFTVA_FAIL_ON=vpp fails a layered picture and counts none of its layers")
    func refusalsAndInjectedFailure() throws {
        let env = try SoftVAEnvironment.start()
        defer { env.stop() }
        let tmp = try TemporaryDirectory()
        let va = try LibVASession(env, options: SoftVAOptions(countersPath: tmp.file("counters.txt"), failAfter: 1,
                                                              failOn: "vpp"))
        let target = try va.createSurface(width: 32, height: 32, fourcc: Self.nv12, rtFormat: Self.yuv420)
        let source = try va.createSurface(width: 32, height: 32, fourcc: Self.nv12, rtFormat: Self.yuv420)
        let (config, context) = try va.videoProcContext(width: 32, height: 32, targets: [target])
        var lumaKey = blendState(flags: VA_BLEND_LUMA_KEY)
        lumaKey.min_luma = 0.1
        lumaKey.max_luma = 0.2
        let refused = try va.compose([CompositionLayer(surface: source),
                                      CompositionLayer(surface: source, blend: lumaKey)], onto: target, context: context)
        #expect(refused == VA_STATUS_ERROR_FLAG_NOT_SUPPORTED)
        let layers = [CompositionLayer(surface: source),
                      CompositionLayer(surface: source, outputRegion: VARectangle(x: 8, y: 8, width: 8, height: 8),
                                       blend: blendState(flags: VA_BLEND_GLOBAL_ALPHA, globalAlpha: 0.25))]
        // the refused picture counted as the first; this one is the second and fails
        let injected = try va.compose(layers, onto: target, context: context)
        #expect(injected == VA_STATUS_ERROR_HW_BUSY)
        vaDestroyContext(va.display, context)
        vaDestroyConfig(va.display, config)
        va.terminate()
        let c = try SoftVACounters(path: tmp.file("counters.txt"))
        #expect(c["injected_failures"] == 1)
        #expect(c["vpp_ops"] == 1)
        #expect(c["vpp_layers"] == 1)
    }
}

/// FFmpeg 5.1's overlay_vaapi (two pipeline buffers per picture) and transpose_vaapi on SoftVA,
/// against the same job done by FFmpeg's software filters.
@Suite("FFmpeg's overlay_vaapi and transpose_vaapi on SoftVA")
struct FFmpegCompositionTests {
    static let frames = 3

    /// Writes `frames` NV12 pictures of a lavfi source to a raw file.
    static func makeSource(_ source: String, _ path: String) async throws {
        let made = try await ChildProcess.run(Tools.ffmpeg, [
            "-hide_banner", "-loglevel", "error", "-f", "lavfi", "-i", source, "-frames:v", "\(frames)",
            "-pix_fmt", "nv12", "-f", "rawvideo", "-y", path,
        ], timeLimit: 60)
        try #require(made.succeeded, "ffmpeg: \(made.stderr)")
    }

    static func hardwareArgs(_ env: SoftVAEnvironment) -> [String] {
        ["-hide_banner", "-loglevel", "error", "-init_hw_device", "vaapi=va:\(env.display.name)", "-filter_hw_device", "va"]
    }

    static func rawInput(_ path: String, _ size: String) -> [String] {
        ["-f", "rawvideo", "-pix_fmt", "nv12", "-s", size, "-r", "10", "-i", path]
    }

    @Test("overlay_vaapi (160x120 at (64, 48) over 320x240 NV12) matches software overlay", arguments: [1.0, 128.0 / 255.0])
    func overlayMatchesSoftware(alpha: Double) async throws {
        let env = try SoftVAEnvironment.start()
        defer { env.stop() }
        let tmp = try TemporaryDirectory()
        try await Self.makeSource("testsrc2=s=320x240:r=10", tmp.file("main.nv12"))
        try await Self.makeSource("smptebars=s=160x120:r=10", tmp.file("overlay.nv12"))
        let inputs = Self.rawInput(tmp.file("main.nv12"), "320x240") + Self.rawInput(tmp.file("overlay.nv12"), "160x120")
        let counters = tmp.file("counters.txt")
        // FFmpeg 5.1's overlay_vaapi always sends VA_BLEND_GLOBAL_ALPHA with this alpha (default 0)
        let hardware = try await ChildProcess.run(Tools.ffmpeg, Self.hardwareArgs(env) + inputs + [
            "-filter_complex",
            "[0:v]hwupload[m];[1:v]hwupload[o];[m][o]overlay_vaapi=x=64:y=48:alpha=\(alpha),hwdownload,format=nv12",
            "-f", "rawvideo", "-y", tmp.file("hw.nv12"),
        ], environment: env.environment(SoftVAOptions(countersPath: counters)), timeLimit: 120)
        #expect(hardware.succeeded, "ffmpeg: \(hardware.stderr)")
        let opacity = Int((alpha * 255).rounded())
        let software = try await ChildProcess.run(Tools.ffmpeg, ["-hide_banner", "-loglevel", "error"] + inputs + [
            "-filter_complex",
            // geq, not lut: lut clips Y to 16...235 and smptebars has sub-black
            "[1:v]format=yuva420p,geq=lum='lum(X,Y)':cb='cb(X,Y)':cr='cr(X,Y)':a=\(opacity)[o];"
                + "[0:v][o]overlay=x=64:y=48:format=yuv420,format=nv12",
            "-f", "rawvideo", "-y", tmp.file("sw.nv12"),
        ], timeLimit: 120)
        try #require(software.succeeded, "ffmpeg: \(software.stderr)")
        let a = try readBytes(tmp.file("hw.nv12")), b = try readBytes(tmp.file("sw.nv12"))
        let pictureBytes = 320 * 240 * 3 / 2
        try #require(a.count == Self.frames * pictureBytes && b.count == a.count)
        let diff = SampleDifference(a, b)
        let quality = psnr(a, b)
        print("softva: overlay_vaapi alpha \(alpha) vs software overlay: \(diff), PSNR \(String(format: "%.1f", quality)) dB")
        // Measured: max 0 at both opacities (software overlay averages alpha over 2x2 for chroma, too).
        #expect(diff.maximum <= 1 && diff.mean <= 0.01, "\(diff)")
        let c = try SoftVACounters(path: counters)
        #expect(c["vpp_ops"] == UInt64(Self.frames))
        #expect(c["vpp_layers"] == UInt64(2 * Self.frames))
    }

    /// transpose_vaapi's directions and the software filters that do the same.
    static let directions: [(String, String)] = [
        ("clock", "transpose=dir=clock"), ("cclock", "transpose=dir=cclock"),
        ("clock_flip", "transpose=dir=clock_flip"), ("cclock_flip", "transpose=dir=cclock_flip"),
        ("reversal", "hflip,vflip"), ("hflip", "hflip"), ("vflip", "vflip"),
    ]

    @Test("transpose_vaapi matches software transpose/hflip/vflip sample for sample", arguments: 0..<7)
    func transposeMatchesSoftware(index: Int) async throws {
        let (direction, filter) = Self.directions[index]
        let env = try SoftVAEnvironment.start()
        defer { env.stop() }
        let tmp = try TemporaryDirectory()
        try await Self.makeSource("testsrc2=s=320x240:r=10", tmp.file("main.nv12"))
        let input = Self.rawInput(tmp.file("main.nv12"), "320x240")
        let hardware = try await ChildProcess.run(Tools.ffmpeg, Self.hardwareArgs(env) + input + [
            "-vf", "hwupload,transpose_vaapi=dir=\(direction),hwdownload,format=nv12",
            "-f", "rawvideo", "-y", tmp.file("hw.nv12"),
        ], environment: env.environment(), timeLimit: 120)
        #expect(hardware.succeeded, "ffmpeg: \(hardware.stderr)")
        let software = try await ChildProcess.run(Tools.ffmpeg, ["-hide_banner", "-loglevel", "error"] + input + [
            "-vf", "format=yuv420p,\(filter),format=nv12", "-f", "rawvideo", "-y", tmp.file("sw.nv12"),
        ], timeLimit: 120)
        try #require(software.succeeded, "ffmpeg: \(software.stderr)")
        let a = try readBytes(tmp.file("hw.nv12")), b = try readBytes(tmp.file("sw.nv12"))
        try #require(a.count == Self.frames * 320 * 240 * 3 / 2 && b.count == a.count)
        let diff = SampleDifference(a, b)
        print("softva: transpose_vaapi \(direction) vs software: \(diff)")
        #expect(diff.maximum == 0, "\(direction): \(diff)")
    }
}
