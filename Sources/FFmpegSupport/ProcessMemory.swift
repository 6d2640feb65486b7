internal import CFFmpeg

/// How the process's allocator treats the large buffers media work allocates and frees.
public enum ProcessMemory {
    /// Makes every allocation of `threshold` bytes or more its own mapping, returned to the
    /// system when freed. glibc otherwise raises that threshold to the size of each large
    /// block freed, so after the first export pictures and packets come from its heaps, where
    /// freed blocks stay resident: a batch of 12 1080p→720p exports in one process peaked at
    /// 1.30× one export (1.06× with this). It costs a mapping per large block: a 200 MB
    /// remux took about 10 % more CPU. Call it once, early; it sets process-wide state.
    /// The corresponding C function is `mallopt(M_MMAP_THRESHOLD)`.
    public static func returnLargeBuffersToTheSystem(threshold: Int = 128 * 1024) {
        _ = cffmpeg_set_mmap_threshold(Int32(clamping: threshold))
    }
}
