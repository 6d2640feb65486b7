import Foundation

/// Small outputs written whole (images, WebVTT indexes): to a partial file beside the
/// destination, named and locked as `AssetWriter` names and locks its own, then renamed into
/// place, so a reader never sees half a file and a write cut short leaves a file that
/// `AssetWriter.removeStalePartialFiles(for:)` recognises (unlike Foundation's `.atomic`
/// temporary files, which nothing removes).
public enum OutputFile {
    /// Writes `data` to `url`, replacing a file there; on failure nothing is left beside it.
    public static func write(_ data: Data, to url: URL) throws(MediaError) {
        let temporary = AssetWriter.temporaryURL(beside: url)
        let lock = try PartialFileLock(creating: temporary)
        // The lock is held until the file is renamed or removed.
        try withExtendedLifetime(lock) { () throws(MediaError) in
            do throws(MediaError) {
                try lock.write(data, path: url.path)
                guard rename(temporary.path, url.path) == 0 else {
                    throw MediaError(.ioError, "cannot move the file into place: \(String(cString: strerror(errno)))", path: url.path)
                }
            } catch {
                unlink(temporary.path)
                throw error
            }
        }
    }
}
