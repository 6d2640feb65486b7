import ArgumentParser
import Foundation

/// The shard this process runs and what chose it: said on stderr and in every JSON line, so a
/// farm's logs show which slice of the batch each machine ran and why.
struct ShardAssignment: Equatable, Sendable, Encodable {
    var shard: Shard
    /// What chose the shard, in the order read: `--shard 1/4`, `--shard-count 8`, or an
    /// environment variable as `NAME=value`.
    var sources: [String]

    /// The sources as one phrase for the log line.
    var summary: String { sources.joined(separator: ", ") }

    enum CodingKeys: String, CodingKey { case index, count, sources }

    func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(shard.index, forKey: .index)
        try c.encode(shard.count, forKey: .count)
        try c.encode(sources, forKey: .sources)
    }

    /// The variable that counts a scheduler's index, needed by Kubernetes, which sets no count.
    static let countVariable = "VAF_SHARD_COUNT"

    /// A number of shards and where it was read, as `--shard-count 8` or `NAME=8`.
    struct Count: Sendable {
        var value: Int
        var source: String
    }

    /// The shard for this run: `--shard` when given (the environment is then not read), else
    /// the one a scheduler's variables in `environment` name, counted by the scheduler,
    /// `--shard-count` or `VAF_SHARD_COUNT`; nil when nothing asks for a shard. Whatever asks
    /// for a shard but does not say exactly which is a usage error, never a silent full batch.
    /// The shard this process runs, from `--shard`, `--shard-count` and this process's
    /// environment. The options were checked in `validate()`, so a refusal here is the
    /// environment's: one line on stderr and exit 64, without the usage text about arguments.
    static func forThisProcess(option: String?, countOption: Int?) throws -> ShardAssignment? {
        do {
            return try resolve(option: option, countOption: countOption, environment: ProcessInfo.processInfo.environment)
        } catch let error as ValidationError {
            FileHandle.standardError.write(Data("vaf: \(error.message)\n".utf8))
            throw ExitCode.validationFailure
        }
    }

    static func resolve(option: String?, countOption: Int?, environment: [String: String]) throws -> ShardAssignment? {
        try checkOptions(shard: option, shardCount: countOption)
        if let option, let shard = Shard(option) {
            return ShardAssignment(shard: shard, sources: ["--shard \(option)"])
        }
        let count = try explicitCount(option: countOption, environment: environment)
        if environment[SlurmArray.idVariable] != nil {
            return try SlurmArray(environment).assignment(explicitCount: count)
        }
        if let scheduler = IndexedScheduler.all.first(where: { environment[$0.indexVariable] != nil }) {
            return try scheduler.assignment(environment, explicitCount: count)
        }
        if let count {
            let indexes = ([SlurmArray.idVariable] + IndexedScheduler.all.map(\.indexVariable)).joined(separator: ", ")
            throw ValidationError("\(count.source) gives a shard count but no scheduler sets a shard index (\(indexes)): make the Kubernetes Job's completionMode Indexed, or pass --shard I/N.")
        }
        return nil
    }

    /// `--shard` and `--shard-count` as written, before any environment is read: a usage error
    /// when either is malformed or they disagree.
    static func checkOptions(shard: String?, shardCount: Int?) throws {
        if let shardCount, shardCount < 1 { throw ValidationError("--shard-count \(shardCount) must be at least 1.") }
        guard let shard else { return }
        guard let parsed = Shard(shard) else { throw ValidationError("--shard takes I/N with 0 ≤ I < N, e.g. 0/4.") }
        if let shardCount, shardCount != parsed.count {
            throw ValidationError("--shard \(shard) and --shard-count \(shardCount) conflict: give one count.")
        }
    }

    /// A count given by hand: `--shard-count`, which wins, else `VAF_SHARD_COUNT`.
    private static func explicitCount(option: Int?, environment: [String: String]) throws -> Count? {
        if let option { return Count(value: option, source: "--shard-count \(option)") }
        guard let text = environment[countVariable] else { return nil }
        return Count(value: try number(countVariable, text, atLeast: 1), source: "\(countVariable)=\(text)")
    }

    /// The integer value of variable `name`, or a usage error naming the variable and its value.
    static func number(_ name: String, _ text: String, atLeast minimum: Int) throws -> Int {
        guard let value = Int(text) else { throw ValidationError("\(name)=\(text) is not a whole number; pass --shard I/N to choose the shard yourself.") }
        guard value >= minimum else { throw ValidationError("\(name)=\(text) must be at least \(minimum); pass --shard I/N to choose the shard yourself.") }
        return value
    }
}

/// A scheduler that numbers an array's tasks 0, 1, 2… in one variable and may give their
/// count in another: Kubernetes Indexed Jobs, AWS Batch, Google Cloud Batch, Cloud Run jobs.
struct IndexedScheduler: Sendable {
    /// The scheduler as the usage error names it.
    var name: String
    var indexVariable: String
    var countVariable: String
    /// How to give the count when the scheduler does not.
    var countAdvice: String

    static let kubernetes = IndexedScheduler(name: "a Kubernetes Indexed Job", indexVariable: "JOB_COMPLETION_INDEX", countVariable: "JOB_COMPLETIONS",
                                             countAdvice: "set \(ShardAssignment.countVariable) in the Job's env to its completions")

    /// The schedulers in the order they are looked for.
    static let all: [IndexedScheduler] = [
        kubernetes,
        IndexedScheduler(name: "an AWS Batch array job", indexVariable: "AWS_BATCH_JOB_ARRAY_INDEX", countVariable: "AWS_BATCH_JOB_ARRAY_SIZE",
                         countAdvice: "set \(ShardAssignment.countVariable) to the array size"),
        IndexedScheduler(name: "a Google Cloud Batch job", indexVariable: "BATCH_TASK_INDEX", countVariable: "BATCH_TASK_COUNT",
                         countAdvice: "set \(ShardAssignment.countVariable) to the task count"),
        IndexedScheduler(name: "a Cloud Run job", indexVariable: "CLOUD_RUN_TASK_INDEX", countVariable: "CLOUD_RUN_TASK_COUNT",
                         countAdvice: "set \(ShardAssignment.countVariable) to the task count"),
    ]

    /// The shard this task runs: its index of the scheduler's count or `explicitCount`, which
    /// must agree when both are given.
    func assignment(_ environment: [String: String], explicitCount: ShardAssignment.Count?) throws -> ShardAssignment {
        let indexText = environment[indexVariable] ?? ""
        let index = try ShardAssignment.number(indexVariable, indexText, atLeast: 0)
        var sources = ["\(indexVariable)=\(indexText)"]
        let schedulerCount = try environment[countVariable].map {
            ShardAssignment.Count(value: try ShardAssignment.number(countVariable, $0, atLeast: 1), source: "\(countVariable)=\($0)")
        }
        if let schedulerCount, let explicitCount, schedulerCount.value != explicitCount.value {
            throw ValidationError("\(schedulerCount.source) and \(explicitCount.source) disagree on the shard count; give one count.")
        }
        guard let count = explicitCount ?? schedulerCount else {
            throw ValidationError("\(indexVariable)=\(indexText) (\(name)) gives a shard index but no count: \(countAdvice), or pass --shard-count N or --shard I/N.")
        }
        sources.append(count.source)
        guard index < count.value else {
            throw ValidationError("\(indexVariable)=\(indexText) is out of range for \(count.source) (indexes 0 to \(count.value - 1)); pass --shard I/N.")
        }
        return ShardAssignment(shard: Shard(index: index, count: count.value), sources: sources)
    }
}

/// A Slurm array task: task IDs MIN, MIN+STEP, … MAX (`--array=0-8:4` runs 0, 4 and 8), so
/// the task's shard is (ID − MIN) / STEP of COUNT. A list array (`--array=1,3,5`, which Slurm
/// reports with STEP 1) has no such formula and is refused.
struct SlurmArray {
    static let idVariable = "SLURM_ARRAY_TASK_ID"
    static let minVariable = "SLURM_ARRAY_TASK_MIN"
    static let maxVariable = "SLURM_ARRAY_TASK_MAX"
    static let stepVariable = "SLURM_ARRAY_TASK_STEP"
    static let countVariable = "SLURM_ARRAY_TASK_COUNT"

    var id: Int, min: Int, max: Int, step: Int, count: Int
    /// Each variable read, as `NAME=value`.
    var sources: [String]

    /// Reads the five variables Slurm sets in every array task; a missing or non-numeric one
    /// is a usage error naming it.
    init(_ environment: [String: String]) throws {
        func read(_ name: String, atLeast minimum: Int) throws -> (Int, String) {
            guard let text = environment[name] else {
                throw ValidationError("\(Self.idVariable) is set but \(name) is not, so the array's shape is unknown; pass --shard I/N.")
            }
            return (try ShardAssignment.number(name, text, atLeast: minimum), "\(name)=\(text)")
        }
        let fields = [try read(Self.idVariable, atLeast: 0), try read(Self.minVariable, atLeast: 0), try read(Self.maxVariable, atLeast: 0),
                      try read(Self.stepVariable, atLeast: 1), try read(Self.countVariable, atLeast: 1)]
        (id, min, max, step, count) = (fields[0].0, fields[1].0, fields[2].0, fields[3].0, fields[4].0)
        sources = fields.map(\.1)
    }

    /// The shard this task runs, or a usage error when the variables describe no stepped range
    /// holding this task, or `explicitCount` disagrees with the array's count.
    func assignment(explicitCount: ShardAssignment.Count?) throws -> ShardAssignment {
        let shape = "\(Self.minVariable)=\(min), \(Self.maxVariable)=\(max), \(Self.stepVariable)=\(step)"
        guard max >= min, (max - min) / step + 1 == count else {
            throw ValidationError("\(shape) describe \(max >= min ? (max - min) / step + 1 : 0) tasks but \(Self.countVariable)=\(count): a list array (--array=1,3,5) gives no shard by formula; pass --shard I/N.")
        }
        guard (min...max).contains(id), (id - min) % step == 0 else {
            throw ValidationError("\(Self.idVariable)=\(id) is not one of the tasks \(shape) describe; pass --shard I/N.")
        }
        if let explicitCount, explicitCount.value != count {
            throw ValidationError("\(Self.countVariable)=\(count) and \(explicitCount.source) disagree on the shard count; give one count.")
        }
        return ShardAssignment(shard: Shard(index: (id - min) / step, count: count), sources: sources)
    }
}
