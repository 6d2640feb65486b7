internal import CVA

/// A failed libva call: the `VAStatus` it returned, libva's text for it, and which call failed.
public struct VAError: Error, Hashable, Sendable, CustomStringConvertible {
    /// The status code the call returned.
    public var status: Status
    /// libva's description of the status, from `vaErrorStr`.
    public var message: String
    /// The libva function that failed, such as `vaInitialize`.
    public var call: String

    /// Builds the error for `status` returned by `call`, taking the text from libva.
    /// The corresponding C function is `vaErrorStr`.
    public init(status: Status, call: String) {
        self.status = status
        self.call = call
        self.message = String(cString: vaErrorStr(status.rawValue))
    }

    /// Builds the error with explicit text, for statuses read from a log or a profile rather than libva.
    public init(status: Status, message: String, call: String) {
        self.status = status
        self.message = message
        self.call = call
    }

    public var description: String { "\(call) failed: \(message) (\(status.name))" }

    /// A libva `VAStatus`: an open struct, because drivers return codes newer than this build's headers.
    public struct Status: RawRepresentable, Hashable, Sendable, Codable, CustomStringConvertible {
        public var rawValue: Int32
        public init(rawValue: Int32) { self.rawValue = rawValue }

        /// The status with libva's macro name, such as `VA_STATUS_ERROR_UNKNOWN`, if this build knows it.
        public init?(name: String) {
            guard let code = VANameTables.statusCode[name] else { return nil }
            rawValue = Int32(bitPattern: code)
        }

        /// libva's macro name, or the hex code for a status this build has no name for.
        public var name: String {
            VANameTables.statusName[UInt32(bitPattern: rawValue)] ?? "VAStatus(0x\(String(UInt32(bitPattern: rawValue), radix: 16)))"
        }

        public var description: String { name }

        public static let success = Status(rawValue: 0x00)
        public static let operationFailed = Status(rawValue: 0x01)
        public static let allocationFailed = Status(rawValue: 0x02)
        public static let invalidDisplay = Status(rawValue: 0x03)
        public static let invalidConfig = Status(rawValue: 0x04)
        public static let invalidContext = Status(rawValue: 0x05)
        public static let invalidSurface = Status(rawValue: 0x06)
        public static let attributeNotSupported = Status(rawValue: 0x0a)
        public static let maxNumExceeded = Status(rawValue: 0x0b)
        public static let unsupportedProfile = Status(rawValue: 0x0c)
        public static let unsupportedEntrypoint = Status(rawValue: 0x0d)
        public static let unsupportedRTFormat = Status(rawValue: 0x0e)
        public static let invalidParameter = Status(rawValue: 0x12)
        public static let resolutionNotSupported = Status(rawValue: 0x13)
        public static let unimplemented = Status(rawValue: 0x14)
        public static let unsupportedFilter = Status(rawValue: 0x20)
        public static let unsupportedMemoryType = Status(rawValue: 0x24)
        public static let unknown = Status(rawValue: -1)
    }
}

/// Matches an error against a status, so `catch VAError.Status.unimplemented` reads naturally.
public func ~= (pattern: VAError.Status, value: any Error) -> Bool {
    (value as? VAError)?.status == pattern
}

/// Runs one libva call and turns a non-success status into a `VAError` naming `call`.
func vaCheck(_ call: String, _ body: () -> VAStatus) throws(VAError) {
    let status = body()
    guard status == cva_VA_STATUS_SUCCESS() else { throw VAError(status: .init(rawValue: status), call: call) }
}
