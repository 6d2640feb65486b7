internal import CVA
import MediaCore

extension VADisplayConnection {
    /// Everything the device reports: each profile × entry point with its config attributes, surface
    /// attributes per config, image formats, and video processing filters and pipeline limits.
    func capabilities(vendor: String, driverName: String?) throws(VAError) -> DeviceCapabilities {
        let pairs = try profileEntrypoints()
        var configs: [ConfigCapabilities] = []
        var surfaces: [SurfaceCapabilities] = []
        for (profile, entrypoint) in pairs {
            let p = VideoProfile(code: profile.rawValue), e = Entrypoint(code: Int32(bitPattern: entrypoint.rawValue))
            configs.append(ConfigCapabilities(profile: p, entrypoint: e, attributes: try configAttributes(profile, entrypoint)))
            if let surface = surfaceAttributes(profile, entrypoint) { surfaces.append(surface) }
        }
        let hasVPP = configs.contains { $0.profile == .none && $0.entrypoint == .videoProc }
        return DeviceCapabilities(vendor: vendor, driver: driverName, apiVersion: apiVersion, configs: configs,
                                  surfaces: surfaces, imageFormats: try imageFormats(),
                                  videoProcessing: hasVPP ? videoProcessing() : nil)
    }

    /// Every supported profile × entry point, profiles in the driver's order.
    /// The corresponding C functions are `vaQueryConfigProfiles` and `vaQueryConfigEntrypoints`.
    private func profileEntrypoints() throws(VAError) -> [(VAProfile, VAEntrypoint)] {
        var profiles = [VAProfile](repeating: VAProfileNone, count: Int(max(vaMaxNumProfiles(display), 1)))
        var profileCount: Int32 = 0
        try vaCheck("vaQueryConfigProfiles") { vaQueryConfigProfiles(display, &profiles, &profileCount) }
        var entrypoints = [VAEntrypoint](repeating: VAEntrypointVLD, count: Int(max(vaMaxNumEntrypoints(display), 1)))
        var pairs: [(VAProfile, VAEntrypoint)] = []
        for profile in profiles.prefix(Int(profileCount)) {
            var count: Int32 = 0
            let status = vaQueryConfigEntrypoints(display, profile, &entrypoints, &count)
            if status == VA_STATUS_ERROR_UNSUPPORTED_PROFILE { continue }
            guard status == cva_VA_STATUS_SUCCESS() else {
                throw VAError(status: .init(rawValue: status), call: "vaQueryConfigEntrypoints")
            }
            pairs += entrypoints.prefix(Int(count)).map { (profile, $0) }
        }
        return pairs
    }

    /// The attributes the driver supports for one pair, in libva's attribute order.
    /// The corresponding C function is `vaGetConfigAttributes`.
    private func configAttributes(_ profile: VAProfile, _ entrypoint: VAEntrypoint) throws(VAError) -> [ConfigAttribute] {
        var attributes = (0..<Int32(VAConfigAttribTypeMax.rawValue)).map {
            VAConfigAttrib(type: VAConfigAttribType(rawValue: numericCast($0)), value: 0)
        }
        try vaCheck("vaGetConfigAttributes") {
            vaGetConfigAttributes(display, profile, entrypoint, &attributes, Int32(attributes.count))
        }
        return attributes.filter { $0.value != cva_VA_ATTRIB_NOT_SUPPORTED() }
            .map { ConfigAttribute(type: ConfigAttributeType(code: Int32(bitPattern: $0.type.rawValue)), value: $0.value) }
    }

    /// Surface attributes of a config, or `nil` when the driver will not create the config or answer.
    /// The corresponding C functions are `vaCreateConfig` and `vaQuerySurfaceAttributes`.
    private func surfaceAttributes(_ profile: VAProfile, _ entrypoint: VAEntrypoint) -> SurfaceCapabilities? {
        var config = VAConfigID(cva_VA_INVALID_ID())
        guard vaCreateConfig(display, profile, entrypoint, nil, 0, &config) == cva_VA_STATUS_SUCCESS() else { return nil }
        defer { vaDestroyConfig(display, config) }
        var count: UInt32 = 0
        guard vaQuerySurfaceAttributes(display, config, nil, &count) == cva_VA_STATUS_SUCCESS(), count > 0 else { return nil }
        var attributes = [VASurfaceAttrib](repeating: VASurfaceAttrib(), count: Int(count))
        guard vaQuerySurfaceAttributes(display, config, &attributes, &count) == cva_VA_STATUS_SUCCESS() else { return nil }
        var formats: [String] = []
        var minWidth: Int?, minHeight: Int?, maxWidth: Int?, maxHeight: Int?
        var memory: UInt32 = 0
        for attribute in attributes.prefix(Int(count)) where attribute.flags != 0 {
            let value = attribute.value.value.i
            switch attribute.type {
            case VASurfaceAttribPixelFormat: formats.append(fourCCString(UInt32(bitPattern: value)))
            case VASurfaceAttribMinWidth: minWidth = Int(value)
            case VASurfaceAttribMinHeight: minHeight = Int(value)
            case VASurfaceAttribMaxWidth: maxWidth = Int(value)
            case VASurfaceAttribMaxHeight: maxHeight = Int(value)
            case VASurfaceAttribMemoryType: memory |= UInt32(bitPattern: value)
            default: continue
            }
        }
        return SurfaceCapabilities(
            profile: VideoProfile(code: profile.rawValue), entrypoint: Entrypoint(code: Int32(bitPattern: entrypoint.rawValue)),
            pixelFormats: formats, minWidth: minWidth, minHeight: minHeight, maxWidth: maxWidth, maxHeight: maxHeight,
            memoryTypes: SurfaceMemoryTypes(rawValue: memory).names)
    }

    /// The image formats for upload and download, as fourccs.
    /// The corresponding C function is `vaQueryImageFormats`.
    private func imageFormats() throws(VAError) -> [String] {
        var formats = [VAImageFormat](repeating: VAImageFormat(), count: Int(max(vaMaxNumImageFormats(display), 1)))
        var count: Int32 = 0
        try vaCheck("vaQueryImageFormats") { vaQueryImageFormats(display, &formats, &count) }
        return formats.prefix(Int(count)).map { fourCCString($0.fourcc) }
    }

    /// VPP filters and pipeline limits, from a throwaway VideoProc config and context; `nil` when the
    /// driver will not create them.
    /// The corresponding C functions are `vaQueryVideoProcFilters` and `vaQueryVideoProcPipelineCaps`.
    private func videoProcessing() -> VideoProcessingCapabilities? {
        var config = VAConfigID(cva_VA_INVALID_ID())
        guard vaCreateConfig(display, VAProfileNone, VAEntrypointVideoProc, nil, 0, &config) == cva_VA_STATUS_SUCCESS() else {
            return nil
        }
        defer { vaDestroyConfig(display, config) }
        var context = VAContextID(cva_VA_INVALID_ID())
        guard vaCreateContext(display, config, 0, 0, 0, nil, 0, &context) == cva_VA_STATUS_SUCCESS() else { return nil }
        defer { vaDestroyContext(display, context) }

        var filters = [VAProcFilterType](repeating: VAProcFilterNone, count: Int(VAProcFilterCount.rawValue))
        var filterCount = UInt32(filters.count)
        var names: [String] = []
        if vaQueryVideoProcFilters(display, context, &filters, &filterCount) == cva_VA_STATUS_SUCCESS() {
            names = filters.prefix(Int(filterCount)).map { Self.filterName(Int($0.rawValue)) }
        }

        var inputFormats = [UInt32](repeating: 0, count: 128)
        var outputFormats = [UInt32](repeating: 0, count: 128)
        var inputStandards = [VAProcColorStandardType](repeating: VAProcColorStandardNone, count: 32)
        var outputStandards = [VAProcColorStandardType](repeating: VAProcColorStandardNone, count: 32)
        let pipeline: PipelineCapabilities? = inputFormats.withUnsafeMutableBufferPointer { inFormats in
            outputFormats.withUnsafeMutableBufferPointer { outFormats in
                inputStandards.withUnsafeMutableBufferPointer { inStandards in
                    outputStandards.withUnsafeMutableBufferPointer { outStandards in
                        var caps = VAProcPipelineCaps()
                        caps.input_pixel_format = inFormats.baseAddress
                        caps.num_input_pixel_formats = UInt32(inFormats.count)
                        caps.output_pixel_format = outFormats.baseAddress
                        caps.num_output_pixel_formats = UInt32(outFormats.count)
                        caps.input_color_standards = inStandards.baseAddress
                        caps.num_input_color_standards = UInt32(inStandards.count)
                        caps.output_color_standards = outStandards.baseAddress
                        caps.num_output_color_standards = UInt32(outStandards.count)
                        guard vaQueryVideoProcPipelineCaps(display, context, nil, 0, &caps) == cva_VA_STATUS_SUCCESS() else {
                            return nil
                        }
                        func size(_ w: UInt32, _ h: UInt32) -> Size? {
                            w == 0 || h == 0 ? nil : Size(width: Int(w), height: Int(h))
                        }
                        // A driver may point the lists at arrays of its own (SoftVA, v4l2-request) or
                        // fill ours, or leave them untouched (our zeroed arrays, our count): zeros are no format.
                        func formats(_ list: UnsafeMutablePointer<UInt32>?, _ count: UInt32, ours: UnsafeMutableBufferPointer<UInt32>) -> [String] {
                            guard let list else { return [] }
                            let listed = list == ours.baseAddress ? min(Int(count), ours.count) : Int(count)
                            return UnsafeBufferPointer(start: list, count: listed).filter { $0 != 0 }.map(fourCCString)
                        }
                        return PipelineCapabilities(
                            inputPixelFormats: formats(caps.input_pixel_format, caps.num_input_pixel_formats, ours: inFormats),
                            outputPixelFormats: formats(caps.output_pixel_format, caps.num_output_pixel_formats, ours: outFormats),
                            minInputSize: size(caps.min_input_width, caps.min_input_height),
                            maxInputSize: size(caps.max_input_width, caps.max_input_height),
                            minOutputSize: size(caps.min_output_width, caps.min_output_height),
                            maxOutputSize: size(caps.max_output_width, caps.max_output_height),
                            rotationFlags: caps.rotation_flags, mirrorFlags: caps.mirror_flags, blendFlags: caps.blend_flags)
                    }
                }
            }
        }
        let deinterlacing = names.contains("Deinterlacing") ? deinterlacingMethods(context) : nil
        let toneMapping = names.contains("HighDynamicRangeToneMapping") ? toneMappings(context) : nil
        return VideoProcessingCapabilities(filters: names, deinterlacing: deinterlacing, toneMapping: toneMapping, pipeline: pipeline)
    }

    /// The deinterlacing algorithms the VPP context offers, by name; nil when the query fails.
    /// The corresponding C function is `vaQueryVideoProcFilterCaps`.
    private func deinterlacingMethods(_ context: VAContextID) -> [String]? {
        var caps = [VAProcFilterCapDeinterlacing](repeating: VAProcFilterCapDeinterlacing(), count: Int(VAProcDeinterlacingCount.rawValue))
        var count = UInt32(caps.count)
        guard vaQueryVideoProcFilterCaps(display, context, VAProcFilterDeinterlacing, &caps, &count) == cva_VA_STATUS_SUCCESS() else {
            return nil
        }
        let names = ["None", "Bob", "Weave", "MotionAdaptive", "MotionCompensated"]
        return caps.prefix(Int(min(count, UInt32(caps.count)))).map {
            let code = Int($0.type.rawValue)
            return names.indices.contains(code) ? names[code] : "VAProcDeinterlacing(\(code))"
        }
    }

    /// The HDR tone mappings the VPP context offers, as "<metadata> <directions>" per entry
    /// (`HDR10 HDR-to-SDR`); nil when the query fails.
    /// The corresponding C function is `vaQueryVideoProcFilterCaps`.
    private func toneMappings(_ context: VAContextID) -> [String]? {
        var caps = [VAProcFilterCapHighDynamicRange](repeating: VAProcFilterCapHighDynamicRange(), count: 8)
        var count = UInt32(caps.count)
        guard vaQueryVideoProcFilterCaps(display, context, VAProcFilterHighDynamicRangeToneMapping, &caps, &count)
                == cva_VA_STATUS_SUCCESS() else { return nil }
        let metadata = ["None", "HDR10"]
        let directions: [(UInt16, String)] = [(1, "HDR-to-HDR"), (2, "HDR-to-SDR"), (4, "HDR-to-EDR"), (8, "SDR-to-HDR")]
        return caps.prefix(Int(min(count, UInt32(caps.count)))).flatMap { cap -> [String] in
            let code = Int(cap.metadata_type.rawValue)
            let kind = metadata.indices.contains(code) ? metadata[code] : "VAProcHighDynamicRangeMetadata(\(code))"
            return directions.filter { cap.caps_flag & $0.0 != 0 }.map { "\(kind) \($0.1)" }
        }
    }

    static func filterName(_ code: Int) -> String {
        let names = ["None", "NoiseReduction", "Deinterlacing", "Sharpening", "ColorBalance", "SkinToneEnhancement",
                     "TotalColorCorrection", "HVSNoiseReduction", "HighDynamicRangeToneMapping", "3DLUT"]
        return names.indices.contains(code) ? names[code] : "VAProcFilter(\(code))"
    }
}
