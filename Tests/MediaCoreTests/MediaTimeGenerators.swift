import MediaCore
import PropertyBased

/// Timescales that media really uses; their pairwise least common multiples stay far below
/// `MediaTime.maxTimescale`, so sums of times in them are exact.
let commonTimescales: [Int32] = [1, 2, 3, 24, 25, 30, 48, 50, 60, 600, 1000, 44100, 48000, 90000]

/// Numeric times with moderate values in common timescales: arithmetic on them never rounds.
let exactTime = zip(Gen.int64(in: -1_000_000_000...1_000_000_000), Gen.int(in: 0...commonTimescales.count - 1))
    .map { value, index in MediaTime(value: value, timescale: commonTimescales[index]) }

/// Nonnegative numeric times in common timescales, for durations.
let exactDuration = zip(Gen.int64(in: 1...1_000_000), Gen.int(in: 0...commonTimescales.count - 1))
    .map { value, index in MediaTime(value: value, timescale: commonTimescales[index]) }

/// Numeric times anywhere in the representable range, with any positive timescale.
let wideTime = zip(Gen.int64(in: -Int64.max...Int64.max), Gen.int32(in: 1...Int32.max))
    .map { value, timescale in MediaTime(value: value, timescale: timescale) }

/// Numeric times small enough that `Double` seconds order them exactly like the rationals do.
let smallTime = zip(Gen.int64(in: -100_000...100_000), Gen.int32(in: 1...10_000))
    .map { value, timescale in MediaTime(value: value, timescale: timescale) }

let specialTimes: [MediaTime] = [.invalid, .indefinite, .positiveInfinity, .negativeInfinity, .zero]

/// Any time: specials, and numeric times in epochs 0 to 2.
let anyTime = zip(Gen.int(in: 0...14), smallTime, Gen.int64(in: 0...2))
    .map { input in
        let (choice, time, epoch) = input
        if choice < specialTimes.count { return specialTimes[choice] }
        var timeInEpoch = time
        timeInEpoch.epoch = epoch
        return timeInEpoch
    }
