import MediaCore

/// What one VA-API device (or one captured `vainfo` output) can do: every profile × entry point with
/// its config attributes, and, for a live device, surface attributes, image formats and VPP support.
///
/// `configs` holds only what both a live probe and `vainfo` can see, so a live probe of a device and
/// the conversion of its `vainfo` output compare equal on it. Everything only a live device can tell
/// (surfaces, image formats, processing) lives in the optional fields, `nil` when not probed.
public struct DeviceCapabilities: Codable, Equatable, Sendable {
    /// The driver's vendor string, verbatim (`Intel iHD driver for Intel(R) Gen Graphics - 22.3.1 ()`).
    public var vendor: String?
    /// The libva driver name (`iHD`, `i965`, `radeonsi`, `nvidia`), when known.
    public var driver: String?
    /// The VA-API version reported by `vaInitialize`, as "major.minor".
    public var apiVersion: String?
    /// Every supported profile × entry point, in the driver's order, with the attributes it reports.
    public var configs: [ConfigCapabilities]
    /// Per-config surface attributes from `vaQuerySurfaceAttributes`; `nil` when not probed.
    public var surfaces: [SurfaceCapabilities]?
    /// The `VAImage` formats for upload and download (fourccs) from `vaQueryImageFormats`; `nil` when not probed.
    public var imageFormats: [String]?
    /// Video processing filters and pipeline limits; `nil` when not probed or when the device has no VPP.
    public var videoProcessing: VideoProcessingCapabilities?

    public init(vendor: String?, driver: String?, apiVersion: String?, configs: [ConfigCapabilities],
                surfaces: [SurfaceCapabilities]? = nil, imageFormats: [String]? = nil,
                videoProcessing: VideoProcessingCapabilities? = nil) {
        self.vendor = vendor
        self.driver = driver
        self.apiVersion = apiVersion
        self.configs = configs
        self.surfaces = surfaces
        self.imageFormats = imageFormats
        self.videoProcessing = videoProcessing
    }

    /// The config for `profile` × `entrypoint`, if the device supports the pair.
    public func config(_ profile: VideoProfile, _ entrypoint: Entrypoint) -> ConfigCapabilities? {
        configs.first { $0.profile == profile && $0.entrypoint == entrypoint }
    }

    /// The surface attributes probed for `profile` × `entrypoint`, if any.
    public func surface(_ profile: VideoProfile, _ entrypoint: Entrypoint) -> SurfaceCapabilities? {
        surfaces?.first { $0.profile == profile && $0.entrypoint == entrypoint }
    }
}

/// One supported profile × entry point and the config attributes the driver reports for it.
public struct ConfigCapabilities: Codable, Equatable, Sendable {
    public var profile: VideoProfile
    public var entrypoint: Entrypoint
    /// Attributes the driver supports for this pair, ordered by libva's attribute number; attributes it
    /// reports as `VA_ATTRIB_NOT_SUPPORTED` are left out.
    public var attributes: [ConfigAttribute]

    public init(profile: VideoProfile, entrypoint: Entrypoint, attributes: [ConfigAttribute] = []) {
        self.profile = profile
        self.entrypoint = entrypoint
        self.attributes = attributes
    }

    /// The raw value of attribute `type`, if reported.
    public subscript(type: ConfigAttributeType) -> UInt32? {
        attributes.first { $0.type == type }?.value
    }

    /// The RT formats, if the driver reports `VAConfigAttribRTFormat`.
    public var rtFormats: RTFormats? { self[.rtFormat].map(RTFormats.init(rawValue:)) }
    /// The rate-control modes, if reported.
    public var rateControls: RateControlModes? { self[.rateControl].map(RateControlModes.init(rawValue:)) }
    /// The packed headers the encoder accepts, if reported.
    public var packedHeaders: PackedHeaders? { self[.encPackedHeaders].map(PackedHeaders.init(rawValue:)) }
    /// Maximum reference frames in list 0 and list 1, if reported (low and high 16 bits).
    public var maxReferenceFrames: (l0: Int, l1: Int)? {
        self[.encMaxRefFrames].map { (Int($0 & 0xffff), Int($0 >> 16)) }
    }
    /// The largest picture the config handles, if the driver reports both dimensions.
    public var maxPictureSize: Size? {
        guard let w = self[.maxPictureWidth], let h = self[.maxPictureHeight] else { return nil }
        return Size(width: Int(w), height: Int(h))
    }
    /// The number of encode quality levels, if reported.
    public var qualityLevels: Int? { self[.encQualityRange].map(Int.init) }
    /// The maximum number of slices per picture, if reported.
    public var maxSlices: Int? { self[.encMaxSlices].map(Int.init) }
}

/// One config attribute: libva's attribute type and its raw 32-bit value.
public struct ConfigAttribute: Codable, Equatable, Sendable {
    public var type: ConfigAttributeType
    public var value: UInt32

    public init(type: ConfigAttributeType, value: UInt32) {
        self.type = type
        self.value = value
    }
}

/// Surface attributes of one config, from `vaQuerySurfaceAttributes`.
public struct SurfaceCapabilities: Codable, Equatable, Sendable {
    public var profile: VideoProfile
    public var entrypoint: Entrypoint
    /// Pixel formats (fourccs such as `NV12`, `P010`) surfaces of this config can have.
    public var pixelFormats: [String]
    public var minWidth: Int?
    public var minHeight: Int?
    public var maxWidth: Int?
    public var maxHeight: Int?
    /// Memory types surfaces can be imported from or exported to (`VA`, `DRM_PRIME_2`, …).
    public var memoryTypes: [String]

    public init(profile: VideoProfile, entrypoint: Entrypoint, pixelFormats: [String], minWidth: Int?, minHeight: Int?,
                maxWidth: Int?, maxHeight: Int?, memoryTypes: [String]) {
        self.profile = profile
        self.entrypoint = entrypoint
        self.pixelFormats = pixelFormats
        self.minWidth = minWidth
        self.minHeight = minHeight
        self.maxWidth = maxWidth
        self.maxHeight = maxHeight
        self.memoryTypes = memoryTypes
    }

    /// The largest surface, if the driver reports both limits.
    public var maxSize: Size? {
        guard let maxWidth, let maxHeight else { return nil }
        return Size(width: maxWidth, height: maxHeight)
    }
}

/// Video processing (`VAProfileNone` × `VAEntrypointVideoProc`) filters and pipeline limits.
public struct VideoProcessingCapabilities: Codable, Equatable, Sendable {
    /// Filter names from `vaQueryVideoProcFilters` (`NoiseReduction`, `Deinterlacing`, …).
    public var filters: [String]
    /// The deinterlacing algorithms (`Bob`, `Weave`, `MotionAdaptive`, `MotionCompensated`)
    /// from `vaQueryVideoProcFilterCaps(VAProcFilterDeinterlacing)`; `nil` when the device has
    /// no deinterlacing filter or the query failed.
    public var deinterlacing: [String]?
    /// The HDR tone mappings (`HDR10 HDR-to-SDR`, …: metadata type and direction) from
    /// `vaQueryVideoProcFilterCaps(VAProcFilterHighDynamicRangeToneMapping)`; `nil` when the
    /// device has no tone-mapping filter or the query failed.
    public var toneMapping: [String]?
    /// Pipeline capabilities with no filters applied, from `vaQueryVideoProcPipelineCaps`; `nil` if the query failed.
    public var pipeline: PipelineCapabilities?

    public init(filters: [String], deinterlacing: [String]? = nil, toneMapping: [String]? = nil,
                pipeline: PipelineCapabilities?) {
        self.filters = filters
        self.deinterlacing = deinterlacing
        self.toneMapping = toneMapping
        self.pipeline = pipeline
    }

    /// Deinterlaces by bob (`VAProcDeinterlacingBob`): the algorithm that needs no reference
    /// picture, so one picture comes out for each that goes in, undelayed.
    public var deinterlacesByBob: Bool { deinterlacing?.contains("Bob") == true }

    /// Tone-maps HDR10 pictures to SDR (`VA_TONE_MAPPING_HDR_TO_SDR` with HDR10 metadata).
    public var toneMapsHDR10ToSDR: Bool { toneMapping?.contains("HDR10 HDR-to-SDR") == true }
}

/// What a plain scaling/conversion pipeline accepts, from `VAProcPipelineCaps`.
public struct PipelineCapabilities: Codable, Equatable, Sendable {
    public var inputPixelFormats: [String]
    public var outputPixelFormats: [String]
    public var minInputSize: Size?
    public var maxInputSize: Size?
    public var minOutputSize: Size?
    public var maxOutputSize: Size?
    public var rotationFlags: UInt32
    public var mirrorFlags: UInt32
    public var blendFlags: UInt32

    public init(inputPixelFormats: [String], outputPixelFormats: [String], minInputSize: Size?,
                maxInputSize: Size?, minOutputSize: Size?, maxOutputSize: Size?,
                rotationFlags: UInt32, mirrorFlags: UInt32, blendFlags: UInt32) {
        self.inputPixelFormats = inputPixelFormats
        self.outputPixelFormats = outputPixelFormats
        self.minInputSize = minInputSize
        self.maxInputSize = maxInputSize
        self.minOutputSize = minOutputSize
        self.maxOutputSize = maxOutputSize
        self.rotationFlags = rotationFlags
        self.mirrorFlags = mirrorFlags
        self.blendFlags = blendFlags
    }

    /// Blends a layer with a global alpha (`VA_BLEND_GLOBAL_ALPHA`).
    public var blendsWithGlobalAlpha: Bool { blendFlags & 0x0001 != 0 }

    /// Blends a layer by its own alpha, its colours premultiplied (`VA_BLEND_PREMULTIPLIED_ALPHA`).
    public var blendsWithPremultipliedAlpha: Bool { blendFlags & 0x0002 != 0 }

    /// Turns a picture by `quarterTurns` clockwise quarter turns (`VA_ROTATION_*`; 0 always can).
    public func rotates(quarterTurns: Int) -> Bool {
        let turns = ((quarterTurns % 4) + 4) % 4
        return turns == 0 || rotationFlags & (1 << UInt32(turns)) != 0
    }

    /// Mirrors along the axes in `mirrorFlags` (`VA_MIRROR_HORIZONTAL` 1, `VA_MIRROR_VERTICAL` 2; 0 always can).
    public func mirrors(_ flags: UInt32) -> Bool { flags & ~mirrorFlags == 0 }
}
