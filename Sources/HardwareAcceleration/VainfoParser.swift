/// A captured `vainfo` or `vainfo --all` output read back: the device profile it shows, libva's log
/// lines around it, and anything the reader had to leave out.
///
/// Accepts what users paste: stdout and stderr interleaved, any whitespace after the colon (vainfo
/// prints a tab), `# ` comment lines at the top, and the fall-through `Trying display:` lines.
public struct VainfoCapture: Sendable {
    /// The device as a profile (configs, attributes, or how initialisation failed).
    public var profile: DeviceProfile
    /// libva's and vainfo's log and error lines (`libva info:`, `libva error:`, `vaInitialize failed …`).
    public var log: [String]
    /// Attribute values that `vainfo --all` prints in a form that cannot be turned back into a number.
    public var warnings: [String]

    /// Why the device did not initialise, explained from the whole log; `nil` when it did.
    public var diagnosis: DeviceDiagnosis? {
        guard let failure = profile.initFailure else { return nil }
        return DeviceDiagnosis.initializationFailure(device: nil, status: failure.status, log: log, driver: profile.driver)
    }

    /// The capabilities, or `nil` when `vaInitialize` failed.
    public var capabilities: DeviceCapabilities? { profile.capabilities }

    /// Parses `text`, the contents of `file`.
    ///
    /// - Parameters:
    ///   - name: the profile name (usually the file's base name without extension).
    ///   - source: how the source is named in the profile's `source:` comment.
    public init(text: String, file: String, name: String, source: String) throws(ProfileFormatError) {
        var profile = DeviceProfile(name: name)
        var log: [String] = []
        var warnings: [String] = []
        var headerComments: [String] = []
        var tried: String?
        var requested: String?
        var libvaVersion: String?
        var status: VAError.Status?
        var sawVainfo = false

        var currentPair: DeviceProfile.Pair?
        var currentAttribute: (type: ConfigAttributeType, values: [String])?
        var pending: [DeviceProfile.Attribute] = []

        func flushAttribute() {
            guard let pair = currentPair, let attribute = currentAttribute else { return }
            currentAttribute = nil
            if let value = decodeAttributeValue(attribute.type, attribute.values) {
                if let index = pending.firstIndex(where: { $0.pair == pair && $0.type == attribute.type }) {
                    pending[index].value |= value
                } else {
                    pending.append(.init(pair: pair, type: attribute.type, value: value))
                }
            } else {
                warnings.append("\(pair.profile)/\(pair.entrypoint) \(attribute.type): cannot read back '\(attribute.values.joined(separator: " "))'")
            }
        }

        for rawLine in text.split(separator: "\n", omittingEmptySubsequences: false) {
            let line = rawLine.hasSuffix("\r") ? String(rawLine.dropLast()) : String(rawLine)
            let trimmed = line.trimmingWhitespace()
            if trimmed.isEmpty { flushAttribute(); continue }
            if line.hasPrefix("#") {
                if !sawVainfo, log.isEmpty { headerComments.append(String(line.dropFirst().drop { $0 == " " })) }
                continue
            }
            if let rest = trimmed.after("vainfo: VA-API version:") {
                sawVainfo = true
                profile.api = rest.trimmingWhitespace().prefix { $0 != " " }.trimmingWhitespace()
                continue
            }
            if let rest = trimmed.after("vainfo: Driver version:") {
                profile.vendor = rest.trimmingWhitespace()
                continue
            }
            if trimmed.hasPrefix("vainfo: Supported") { continue }
            if trimmed.hasPrefix("libva ") || trimmed.hasPrefix("error:") || trimmed.contains(" failed") {
                log.append(trimmed)
                if let rest = trimmed.after("libva info: VA-API version") {
                    libvaVersion = rest.trimmingWhitespace().split(separator: ".").prefix(2).joined(separator: ".")
                }
                if let range = trimmed.firstRange(of: "Trying to open ") {
                    tried = DeviceDiagnosis.driverName(fromLibraryPath: String(trimmed[range.upperBound...]).trimmingWhitespace())
                }
                if tried == nil, let path = DeviceDiagnosis.driverLibraryPath(in: trimmed) {
                    tried = DeviceDiagnosis.driverName(fromLibraryPath: path)
                }
                if let range = trimmed.firstRange(of: "requested driver '") {
                    requested = String(trimmed[range.upperBound...].prefix { $0 != "'" })
                }
                if let rest = trimmed.after("vaInitialize failed with error code ") {
                    let code = rest.prefix { $0 == "-" || $0.isNumber }
                    guard let value = Int64(code) else {
                        throw ProfileFormatError(file: file, line: nil, reason: "unreadable status in '\(trimmed)'")
                    }
                    status = VAError.Status(rawValue: Int32(truncatingIfNeeded: value))
                }
                continue
            }
            // Brief list: "      VAProfileH264Main               :<tab or spaces>VAEntrypointVLD".
            if let pair = Self.pairLine(trimmed) {
                flushAttribute()
                sawVainfo = true
                if !profile.configs.contains(pair) { profile.configs.append(pair) }
                continue
            }
            // --all block header: "VAProfileH264Main/VAEntrypointEncSlice".
            if trimmed.hasPrefix("VAProfile"), let slash = trimmed.firstIndex(of: "/"),
               trimmed[trimmed.index(after: slash)...].hasPrefix("VAEntrypoint"), !trimmed.contains(" ") {
                flushAttribute()
                sawVainfo = true
                let pair = DeviceProfile.Pair(VideoProfile(rawValue: String(trimmed[..<slash])),
                                              Entrypoint(rawValue: String(trimmed[trimmed.index(after: slash)...])))
                if !profile.configs.contains(pair) { profile.configs.append(pair) }
                currentPair = pair
                continue
            }
            // --all attribute: "    VAConfigAttribRTFormat    : VA_RT_FORMAT_YUV420", then continuation lines.
            if currentPair != nil, trimmed.hasPrefix("VAConfigAttrib"), let colon = trimmed.firstIndex(of: ":") {
                let type = ConfigAttributeType(rawValue: trimmed[..<colon].trimmingWhitespace())
                let value = trimmed[trimmed.index(after: colon)...].trimmingWhitespace()
                if currentAttribute?.type != type { flushAttribute() }
                if currentAttribute == nil { currentAttribute = (type, []) }
                currentAttribute?.values.append(value)
                continue
            }
            if currentAttribute != nil, line.first?.isWhitespace == true {
                currentAttribute?.values.append(trimmed)
                continue
            }
            if trimmed.hasPrefix("Trying display:") || trimmed.hasPrefix("Authorization required") { continue }
            log.append(trimmed)
        }
        flushAttribute()

        profile.driver = requested ?? tried ?? profile.vendor.flatMap(Self.driverName(fromVendor:))
        var comments = ["source: \(source) (real `vainfo` output; device, OS and driver as noted there)"]
        for comment in headerComments {
            if let origin = comment.after("source:") {
                comments.append("origin: \(origin.trimmingWhitespace())")
            } else {
                comments.append(comment)
            }
        }
        if requested == nil, tried == nil, profile.driver != nil {
            comments.append("driver name inferred from the vendor string")
        }
        comments.append("generated by `vaf probe --from-vainfo FILE --emit-profile`; edit the source, not this file")
        profile.comments = comments

        if let status, status != .success {
            profile.configs = []
            profile.vendor = nil
            profile.api = profile.api ?? libvaVersion
            let message = log.last { $0.hasPrefix("libva error:") } ?? log.last { $0.contains("vaInitialize failed") } ?? ""
            profile.initFailure = .init(status: status, message: message)
        } else {
            guard sawVainfo, !profile.configs.isEmpty else {
                throw ProfileFormatError(file: file, line: nil,
                                         reason: "no vainfo profile list and no vaInitialize failure found (is this `vainfo` output?)")
            }
            profile.attributes = pending
        }
        self.profile = profile
        self.log = log
        self.warnings = warnings
    }

    /// How the file at `path` is named in a profile's `source:` line: from `shared/hardware/vainfo/` on
    /// when it lies in the shared fixtures, else its file name, so the text does not depend on the
    /// working directory or on how the path was spelled.
    public static func sourceName(forPath path: String) -> String {
        let marker = "shared/hardware/vainfo/"
        if let range = path.ranges(of: marker).last { return String(path[range.lowerBound...]) }
        return path.split(separator: "/").last.map(String.init) ?? path
    }

    /// A brief-list line `VAProfileX <spaces> : <whitespace> VAEntrypointY`, or `nil`.
    static func pairLine(_ trimmed: String) -> DeviceProfile.Pair? {
        guard trimmed.hasPrefix("VAProfile"), let colon = trimmed.firstIndex(of: ":") else { return nil }
        let profile = trimmed[..<colon].trimmingWhitespace()
        let entrypoint = trimmed[trimmed.index(after: colon)...].trimmingWhitespace()
        guard entrypoint.hasPrefix("VAEntrypoint"), !profile.contains(" "), !entrypoint.contains(" ") else { return nil }
        return DeviceProfile.Pair(VideoProfile(rawValue: profile), Entrypoint(rawValue: entrypoint))
    }

    /// The libva driver name a vendor string implies (`Intel iHD driver …` → `iHD`), for the common drivers.
    public static func driverName(fromVendor vendor: String) -> String? {
        if vendor.hasPrefix("Intel iHD driver") { return "iHD" }
        if vendor.hasPrefix("Intel i965 driver") { return "i965" }
        if vendor.hasPrefix("VA-API NVDEC driver") { return "nvidia" }
        if vendor.hasPrefix("Mesa Gallium driver") {
            if vendor.contains("AMD") || vendor.contains("Radeon") { return "radeonsi" }
            if vendor.contains("NV") || vendor.contains("nouveau") { return "nouveau" }
        }
        return nil
    }
}

/// Turns the text `vainfo --all` prints for one attribute back into its 32-bit value, or `nil` when
/// vainfo's form loses information (`supported`, JPEG encode features).
func decodeAttributeValue(_ type: ConfigAttributeType, _ values: [String]) -> UInt32? {
    let words = values.flatMap { $0.split(whereSeparator: { $0 == " " || $0 == "\t" }).map(String.init) }
    guard !words.isEmpty else { return nil }
    // Flag macro names, ORed (RT formats, rate control, packed headers, slice structure, …).
    if words.allSatisfy({ $0.hasPrefix("VA_") }) {
        var value: UInt32 = 0
        for word in words {
            guard let bits = VAFlagTables.flags[word] else { return nil }
            value |= bits
        }
        return value
    }
    // "key=value" bit fields.
    if words.allSatisfy({ $0.contains("=") }) {
        let fields: [String: UInt32] = Dictionary(words.compactMap { word in
            let parts = word.split(separator: "=", maxSplits: 1)
            guard parts.count == 2, let number = UInt32(parts[1]) else { return nil }
            return (String(parts[0]), number)
        }, uniquingKeysWith: { first, _ in first })
        guard fields.count == words.count, let layout = bitFieldLayouts[type] else { return nil }
        var value: UInt32 = 0
        var shift: UInt32 = 0
        for (field, width) in layout {
            guard let number = fields[field] else { return nil }
            value |= (number & ((1 << width) - 1)) << shift
            shift += width
        }
        return fields.keys.allSatisfy({ key in layout.contains { $0.0 == key } }) ? value : nil
    }
    let text = words.joined(separator: " ")
    for prefix in ["number of supported quality levels is ", "number of supported regions is ",
                   "number of supported layers is ", "number of supported MV predictors is ", "default value: "] {
        if let rest = text.after(prefix) { return UInt32(rest) ?? Int32(rest).map { UInt32(bitPattern: $0) } }
    }
    if words.count == 1, let number = UInt32(words[0]) { return number }
    if words.count == 1, hexAttributes.contains(type), let number = UInt32(words[0], radix: 16) { return number }
    return nil
}

/// Attributes vainfo prints with `%x`.
private let hexAttributes: Set<ConfigAttributeType> = [
    ConfigAttributeType(rawValue: "VAConfigAttribSpatialResidual"), ConfigAttributeType(rawValue: "VAConfigAttribSpatialClipping"),
    ConfigAttributeType(rawValue: "VAConfigAttribIntraResidual"), ConfigAttributeType(rawValue: "VAConfigAttribEncryption"),
]

/// Bit-field layouts (field, width in bits, from bit 0 up) of the attribute value unions vainfo prints as `key=value`.
private let bitFieldLayouts: [ConfigAttributeType: [(String, UInt32)]] = [
    .encMaxRefFrames: [("l0", 16), ("l1", 16)],
    .encRateControlExt: [("max_num_temporal_layers_minus1", 8), ("temporal_layer_bitrate_control_flag", 1)],
    .maxFrameSize: [("max_frame_size", 1), ("multiple_pass", 1)],
    ConfigAttributeType(rawValue: "VAConfigAttribEncROI"): [("num_roi_regions", 8), ("roi_rc_priority_support", 1),
                                                            ("roi_rc_qp_delta_support", 1)],
    ConfigAttributeType(rawValue: "VAConfigAttribMultipleFrame"): [("max_num_concurrent_frames", 8), ("mixed_quality_level", 1)],
    ConfigAttributeType(rawValue: "VAConfigAttribStats"): [("max_num_past_references", 4), ("max_num_future_references", 4),
                                                           ("num_outputs", 3), ("interlaced", 1)],
]

extension String {
    /// The text after `prefix`, or `nil` if the string does not start with it.
    func after(_ prefix: String) -> Substring? {
        hasPrefix(prefix) ? self[index(startIndex, offsetBy: prefix.count)...] : nil
    }
}
