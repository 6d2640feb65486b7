/// A device personality in the `.profile` text format shared with the SoftVA driver: what a real
/// device's driver reported (or how its `vaInitialize` failed), one record per line.
///
/// Records (fields separated by single spaces, `#` starts a comment line):
/// `name N`, `vendor <rest of line>`, `driver D`, `api M.m`,
/// `config <VAProfile…> <VAEntrypoint…>`, `attr <VAProfile…> <VAEntrypoint…> <VAConfigAttrib…> 0x%08x`,
/// `init-failure <VA_STATUS_…> <message>`. See Hardware/PROBE.md.
public struct DeviceProfile: Equatable, Sendable {
    public var name: String
    /// Comment lines, without the leading `# `, written at the top (the `source:` line first).
    public var comments: [String]
    /// The vendor string verbatim, when the driver initialised.
    public var vendor: String?
    /// The libva driver name, when known.
    public var driver: String?
    /// The VA-API version as "major.minor", when known.
    public var api: String?
    /// Supported profile × entry point pairs, in the driver's order.
    public var configs: [Pair]
    /// Config attribute values, only where the source shows them.
    public var attributes: [Attribute]
    /// How `vaInitialize` failed, for devices that did not initialise; then `configs` is empty.
    public var initFailure: InitFailure?

    public struct Pair: Hashable, Sendable {
        public var profile: VideoProfile
        public var entrypoint: Entrypoint
        public init(_ profile: VideoProfile, _ entrypoint: Entrypoint) {
            self.profile = profile
            self.entrypoint = entrypoint
        }
    }

    public struct Attribute: Equatable, Sendable {
        public var pair: Pair
        public var type: ConfigAttributeType
        public var value: UInt32
        public init(pair: Pair, type: ConfigAttributeType, value: UInt32) {
            self.pair = pair
            self.type = type
            self.value = value
        }
    }

    public struct InitFailure: Equatable, Sendable {
        public var status: VAError.Status
        public var message: String
        public init(status: VAError.Status, message: String) {
            self.status = status
            self.message = message
        }
    }

    public init(name: String, comments: [String] = [], vendor: String? = nil, driver: String? = nil, api: String? = nil,
                configs: [Pair] = [], attributes: [Attribute] = [], initFailure: InitFailure? = nil) {
        self.name = name
        self.comments = comments
        self.vendor = vendor
        self.driver = driver
        self.api = api
        self.configs = configs
        self.attributes = attributes
        self.initFailure = initFailure
    }
}

/// A line of a `.profile` or `vainfo` file that cannot be read: names the file, the line and the cause.
public struct ProfileFormatError: Error, Equatable, Sendable, CustomStringConvertible {
    public var file: String
    public var line: Int?
    public var reason: String

    public init(file: String, line: Int?, reason: String) {
        self.file = file
        self.line = line
        self.reason = reason
    }

    public var description: String { line.map { "\(file):\($0): \(reason)" } ?? "\(file): \(reason)" }
}

extension DeviceProfile {
    /// The profile as `.profile` text: comments, then name/vendor/driver/api, then each config followed by its attributes.
    public var text: String {
        var lines = comments.map { "# \($0)" }
        lines.append("name \(name)")
        if let vendor { lines.append("vendor \(vendor)") }
        if let driver { lines.append("driver \(driver)") }
        if let api { lines.append("api \(api)") }
        if let initFailure { lines.append("init-failure \(initFailure.status.name) \(initFailure.message)") }
        for pair in configs {
            lines.append("config \(pair.profile) \(pair.entrypoint)")
            for attribute in attributes where attribute.pair == pair {
                lines.append("attr \(pair.profile) \(pair.entrypoint) \(attribute.type) \(hex8(attribute.value))")
            }
        }
        return lines.joined(separator: "\n") + "\n"
    }

    /// Reads `.profile` text; `file` names the source in errors.
    public init(profileText: String, file: String) throws(ProfileFormatError) {
        var name: String?
        var profile = DeviceProfile(name: "")
        for (index, rawLine) in profileText.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            let line = rawLine.hasSuffix("\r") ? rawLine.dropLast() : rawLine
            let number = index + 1
            if line.isEmpty { continue }
            if line.hasPrefix("#") {
                profile.comments.append(String(line.dropFirst().drop { $0 == " " }))
                continue
            }
            let keyword = line.prefix { $0 != " " }
            let rest = line.dropFirst(keyword.count + 1)
            let fields = rest.split(separator: " ").map(String.init)
            func fail(_ reason: String) -> ProfileFormatError { ProfileFormatError(file: file, line: number, reason: reason) }
            switch keyword {
            case "name":
                guard fields.count == 1 else { throw fail("'name' takes one word") }
                name = fields[0]
            case "vendor": profile.vendor = String(rest)
            case "driver":
                guard fields.count == 1 else { throw fail("'driver' takes one word") }
                profile.driver = fields[0]
            case "api":
                guard fields.count == 1, fields[0].split(separator: ".").count == 2 else { throw fail("'api' takes major.minor") }
                profile.api = fields[0]
            case "config":
                guard fields.count == 2, fields[0].hasPrefix("VAProfile"), fields[1].hasPrefix("VAEntrypoint") else {
                    throw fail("'config' takes a VAProfile name and a VAEntrypoint name")
                }
                profile.configs.append(Pair(VideoProfile(rawValue: fields[0]), Entrypoint(rawValue: fields[1])))
            case "attr":
                guard fields.count == 4, fields[2].hasPrefix("VAConfigAttrib"), fields[3].hasPrefix("0x"),
                      let value = UInt32(fields[3].dropFirst(2), radix: 16) else {
                    throw fail("'attr' takes a VAProfile, a VAEntrypoint, a VAConfigAttrib name and a 0x hex value")
                }
                let pair = Pair(VideoProfile(rawValue: fields[0]), Entrypoint(rawValue: fields[1]))
                guard profile.configs.contains(pair) else { throw fail("'attr' for \(fields[0]) \(fields[1]) before its 'config' line") }
                profile.attributes.append(Attribute(pair: pair, type: ConfigAttributeType(rawValue: fields[2]), value: value))
            case "init-failure":
                guard let statusName = fields.first, let status = VAError.Status(name: statusName) else {
                    throw fail("'init-failure' takes a VA_STATUS name and a message")
                }
                profile.initFailure = InitFailure(status: status, message: String(rest.dropFirst(statusName.count + 1)))
            default:
                throw fail("unknown record '\(keyword)'")
            }
        }
        guard let name else { throw ProfileFormatError(file: file, line: nil, reason: "no 'name' line") }
        if profile.initFailure != nil, !profile.configs.isEmpty {
            throw ProfileFormatError(file: file, line: nil, reason: "'init-failure' with 'config' lines")
        }
        profile.name = name
        self = profile
    }

    /// The capabilities this profile describes, or `nil` when its `vaInitialize` failed.
    public var capabilities: DeviceCapabilities? {
        guard initFailure == nil else { return nil }
        let configs = configs.map { pair in
            let attributes = attributes.filter { $0.pair == pair }
                .map { ConfigAttribute(type: $0.type, value: $0.value) }
                .sorted { $0.type < $1.type }
            return ConfigCapabilities(profile: pair.profile, entrypoint: pair.entrypoint, attributes: attributes)
        }
        return DeviceCapabilities(vendor: vendor, driver: driver, apiVersion: api, configs: configs)
    }

    /// Why the device did not initialise, or `nil` when it did.
    public var diagnosis: DeviceDiagnosis? {
        guard let initFailure else { return nil }
        return DeviceDiagnosis.initializationFailure(device: nil, status: initFailure.status, log: [initFailure.message],
                                                     driver: driver)
    }
}

func hex8(_ value: UInt32) -> String {
    let digits = String(value, radix: 16)
    return "0x" + String(repeating: "0", count: max(0, 8 - digits.count)) + digits
}
