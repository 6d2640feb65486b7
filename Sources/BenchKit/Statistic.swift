/// The centre and spread of repeated measurements of one quantity: what a benchmark reports
/// instead of a single, noisy number.
///
/// Quartiles interpolate linearly between order statistics (the "type 7" rule of R and NumPy),
/// so they are defined for any count ≥ 1. `relativeSpreadPercent` is (max − min) / median × 100.
public struct Statistic: Codable, Sendable, Hashable {
    public var count: Int
    public var median: Double
    public var min: Double
    public var max: Double
    /// First quartile (25th percentile).
    public var q1: Double
    /// Third quartile (75th percentile).
    public var q3: Double
    /// (max − min) / median in percent; 0 when the median is 0.
    public var relativeSpreadPercent: Double

    /// The statistic of `values`; nil when there are none or any is not finite.
    public init?(_ values: [Double]) {
        guard !values.isEmpty, values.allSatisfy(\.isFinite) else { return nil }
        let sorted = values.sorted()
        count = sorted.count
        median = Self.quantile(sorted, 0.5)
        min = sorted[0]
        max = sorted[sorted.count - 1]
        q1 = Self.quantile(sorted, 0.25)
        q3 = Self.quantile(sorted, 0.75)
        relativeSpreadPercent = median != 0 ? (max - min) / Swift.abs(median) * 100 : 0
    }

    /// Interquartile range, q3 − q1.
    public var interquartileRange: Double { q3 - q1 }

    /// The `p`-quantile (0…1) of already sorted values, interpolating between neighbours.
    public static func quantile(_ sorted: [Double], _ p: Double) -> Double {
        precondition(!sorted.isEmpty, "quantile of no values")
        let position = p * Double(sorted.count - 1)
        let lower = Int(position.rounded(.down))
        let upper = Swift.min(lower + 1, sorted.count - 1)
        let fraction = position - Double(lower)
        return sorted[lower] + (sorted[upper] - sorted[lower]) * fraction
    }
}

/// Ratios of two interleaved series taken pair by pair: run i of one path against run i of the
/// other, so drift on a noisy machine (thermal throttling, a neighbour's build) that hits both
/// runs of a pair cancels out of the ratio.
public enum PairedRatio {
    /// `numerator[i] / denominator[i]` for every pair where both exist and the denominator is
    /// not 0; extra runs of the longer series are left out.
    public static func ratios(_ numerator: [Double], _ denominator: [Double]) -> [Double] {
        zip(numerator, denominator).compactMap { a, b in b != 0 && a.isFinite && b.isFinite ? a / b : nil }
    }

    /// The statistic of the paired ratios; nil when no pair exists.
    public static func statistic(_ numerator: [Double], _ denominator: [Double]) -> Statistic? {
        Statistic(ratios(numerator, denominator))
    }
}
