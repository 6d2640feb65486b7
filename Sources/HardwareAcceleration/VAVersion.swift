internal import CVA

/// The libva API version this module was compiled against.
public enum VAVersion {
    public static var compiled: String { "\(VA_MAJOR_VERSION).\(VA_MINOR_VERSION).\(VA_MICRO_VERSION)" }
}
