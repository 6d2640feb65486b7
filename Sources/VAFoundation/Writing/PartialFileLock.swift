import Foundation

/// The exclusive lock a writer holds on its partial file for as long as it writes it: a file
/// whose lock another process can take has no writer left, wherever that writer ran.
///
/// It is a `flock(LOCK_EX)` lock, not an `fcntl` record lock. An `fcntl` lock belongs to the
/// process and goes as soon as the process closes *any* descriptor of the file; FFmpeg's muxer
/// opens the partial file with a descriptor of its own and closes it at the trailer, before the
/// rename, and a clean-up in the same process would drop it too. A `flock` lock belongs to this
/// one open file description, so only closing `descriptor` (after the rename or the unlink)
/// releases it. Both kinds are kept by the kernel, so a writer in another PID namespace (another
/// container on the host) is seen; on NFS Linux emulates `flock` with whole-file `fcntl` locks
/// (since 2.6.12), so writers on other clients are seen too, and an exclusive lock there needs
/// the file open for writing, which is why both sides open it read-write.
final class PartialFileLock {
    /// The one descriptor of the partial file this writer keeps, holding the lock.
    fileprivate let descriptor: Int32

    /// How many times creation is retried when a clean-up removed the new file before it was locked.
    private static let creationAttempts = 8

    /// Creates `url`, which must not exist, and locks it. A clean-up that opened the file in
    /// the moment between its creation and the lock may have removed it; it is then created
    /// again. A file system without locks (`flock` fails) leaves the file unlocked, which
    /// clean-up, unable to lock it either, never removes.
    init(creating url: URL) throws(MediaError) {
        for _ in 0..<Self.creationAttempts {
            let fd = open(url.path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0o666)
            guard fd >= 0 else {
                let e = errno
                throw MediaError(e == EACCES ? .permissionDenied : .ioError,
                                 "cannot create the partial file: \(String(cString: strerror(e)))", path: url.path)
            }
            var locked: Int32
            repeat { locked = flock(fd, LOCK_EX) } while locked != 0 && errno == EINTR
            if locked != 0 || Self.isStillNamed(fd, url.path) {
                descriptor = fd
                return
            }
            close(fd)
        }
        throw MediaError(.ioError, "the partial file was removed \(Self.creationAttempts) times as it was created", path: url.path)
    }

    /// Closing the descriptor releases the lock.
    deinit { close(descriptor) }

    /// Removes the partial file at `path` if no writer holds its lock, holding the lock while it
    /// unlinks so that a writer creating it that moment sees it go. True when it was removed.
    static func removeIfAbandoned(_ path: String) -> Bool {
        let fd = open(path, O_RDWR | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        var status = stat()
        guard fstat(fd, &status) == 0, status.st_mode & S_IFMT == S_IFREG,
              flock(fd, LOCK_EX | LOCK_NB) == 0, isStillNamed(fd, path) else { return false }
        return unlink(path) == 0
    }

    /// Whether `path` still names the file open on `fd` (neither removed nor replaced).
    private static func isStillNamed(_ fd: Int32, _ path: String) -> Bool {
        var opened = stat(), named = stat()
        return fstat(fd, &opened) == 0 && opened.st_nlink > 0 && stat(path, &named) == 0
            && opened.st_dev == named.st_dev && opened.st_ino == named.st_ino
    }
}

extension PartialFileLock {
    /// Writes all of `data` to the locked file, from its start.
    func write(_ data: Data, path: String) throws(MediaError) {
        let failure: Int32? = data.withUnsafeBytes { buffer in
            var offset = 0
            while offset < buffer.count {
                let written = pwrite(descriptor, buffer.baseAddress! + offset, buffer.count - offset, off_t(offset))
                if written < 0 {
                    if errno == EINTR { continue }
                    return errno
                }
                offset += written
            }
            return nil
        }
        if let failure { throw MediaError(.ioError, "cannot write: \(String(cString: strerror(failure)))", path: path) }
    }
}
