/// Why the SoftVA test environment could not be set up.
public enum VATestSupportError: Error, CustomStringConvertible, Sendable {
    /// A program the harness needs is not installed.
    case missingTool(String, remedy: String)
    /// No X display could be started.
    case displayUnavailable(String)
    /// The SoftVA driver library was not found.
    case driverNotFound(searched: [String])

    public var description: String {
        switch self {
        case .missingTool(let path, let remedy):
            return "\(path) is missing: \(remedy)"
        case .displayUnavailable(let why):
            return "cannot start a virtual X display: \(why)"
        case .driverNotFound(let searched):
            return "libsoftva_drv_video.so not found in \(searched.joined(separator: ", ")); "
                + "build it with `swift build --build-tests` (or `swift build --product softva_drv_video`), "
                + "or set SOFTVA_DRIVER_DIR"
        }
    }
}
