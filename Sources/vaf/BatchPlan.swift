import Foundation
import VAFoundation

/// One file to transcode, as given on the command line, found in a directory, or read from a
/// manifest line.
struct BatchInput: Equatable, Sendable {
    var path: String
    /// The directory argument it was found under, so outputs can mirror the tree.
    var root: String?
    /// Per-input overrides from a manifest line.
    var output: String?
    var preset: String?
}

/// Collects the inputs of a batch: files, directories (recursive, media files only), and
/// manifests (JSON lines: `{"input": "...", "output": "...", "preset": "..."}`).
enum InputCollector {
    static let mediaExtensions: Set<String> = [
        "mp4", "m4v", "mov", "m4a", "m4b", "mkv", "webm", "avi", "ts", "mts", "m2ts", "mpg", "mpeg", "3gp", "flv",
        "wmv", "ogg", "ogv", "opus", "mp3", "flac", "wav", "aac", "ac3", "eac3", "mxf",
    ]

    /// Expands `arguments` in order; directories are walked in sorted order so plans are stable.
    /// A directory never contributes what lies under `outputDirectory` (a batch run twice in
    /// the same folder must not transcode its own outputs), and one that contributes nothing is
    /// an error, not an empty batch.
    static func collect(_ arguments: [String], manifests: [String], outputDirectory: String? = nil) throws -> [BatchInput] {
        var inputs: [BatchInput] = []
        let files = FileManager.default
        let outputs = outputDirectory.map { URL(fileURLWithPath: $0).standardizedFileURL.resolvingSymlinksInPath().path + "/" }
        for argument in arguments {
            var isDirectory: ObjCBool = false
            if files.fileExists(atPath: argument, isDirectory: &isDirectory), isDirectory.boolValue {
                let root = URL(fileURLWithPath: argument).standardizedFileURL
                let found = (files.enumerator(at: root, includingPropertiesForKeys: [.isRegularFileKey])?.allObjects as? [URL]) ?? []
                let media = found
                    .filter { mediaExtensions.contains($0.pathExtension.lowercased()) && !$0.lastPathComponent.hasPrefix(".") }
                    .filter { file in outputs.map { !file.standardizedFileURL.resolvingSymlinksInPath().path.hasPrefix($0) } ?? true }
                    .map(\.standardizedFileURL.path).sorted()
                guard !media.isEmpty else {
                    throw MediaError(.fileNotFound, "no media files found in this directory (looked for \(mediaExtensions.count) extensions, outside the output directory)", path: argument)
                }
                inputs += media.map { BatchInput(path: $0, root: root.path) }
            } else {
                // Missing files stay in the batch: they are reported as failed with their cause.
                inputs.append(BatchInput(path: argument))
            }
        }
        for manifest in manifests {
            inputs += try readManifest(manifest)
        }
        return inputs
    }

    /// One input per non-empty line: a JSON object with `input` and optional `output`, `preset`.
    static func readManifest(_ path: String) throws -> [BatchInput] {
        guard let text = try? String(contentsOfFile: path, encoding: .utf8) else {
            throw MediaError(.fileNotFound, "cannot read the manifest", path: path)
        }
        struct Line: Decodable { var input: String; var output: String?; var preset: String? }
        let base = URL(fileURLWithPath: path).deletingLastPathComponent()
        var inputs: [BatchInput] = []
        for (number, line) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            let trimmed = line.trimmingCharacters(in: .whitespaces)
            guard !trimmed.isEmpty, !trimmed.hasPrefix("#") else { continue }
            guard let entry = try? JSONDecoder().decode(Line.self, from: Data(trimmed.utf8)),
                  let object = try? JSONSerialization.jsonObject(with: Data(trimmed.utf8)) as? [String: Any] else {
                throw MediaError(.invalidArgument, "line \(number + 1) is not a JSON object with an \"input\" string", path: path)
            }
            // A misspelt key would silently drop its setting: refuse it.
            if let unknown = object.keys.sorted().first(where: { !["input", "output", "preset"].contains($0) }) {
                throw MediaError(.invalidArgument, "line \(number + 1): unknown key \"\(unknown)\" (a manifest line takes input, output and preset)", path: path)
            }
            let resolved = entry.input.hasPrefix("/") ? entry.input : base.appendingPathComponent(entry.input).standardizedFileURL.path
            inputs.append(BatchInput(path: resolved, output: entry.output, preset: entry.preset))
        }
        return inputs
    }
}

/// A deterministic slice of a batch for one machine of a farm: input i goes to shard i mod N.
struct Shard: Equatable, Sendable, CustomStringConvertible {
    var index: Int
    var count: Int

    var description: String { "\(index)/\(count)" }

    /// Parses "I/N" with 0 ≤ I < N.
    init?(_ text: String) {
        let parts = text.split(separator: "/")
        guard parts.count == 2, let i = Int(parts[0]), let n = Int(parts[1]), n > 0, i >= 0, i < n else { return nil }
        (index, count) = (i, n)
    }

    init(index: Int, count: Int) {
        (self.index, self.count) = (index, count)
    }

    /// The items of this shard: every `count`-th from `index`.
    func select<T>(_ items: [T]) -> [T] {
        items.enumerated().filter { $0.offset % count == index }.map(\.element)
    }
}

/// Turns inputs into output paths inside the output directory, from a template with
/// `{name}` (input file name without extension), `{ext}`, `{preset}`, `{dir}` (the input's
/// folder relative to the directory argument it came from) and `{index}`.
///
/// Every path stays inside the output directory whatever the input names: `..`, absolute
/// paths and separators inside tokens are neutralised.
struct OutputNamer {
    static let defaultTemplate = "{dir}/{name}.{ext}"
    let directory: URL
    let template: String

    init(directory: String, template: String = OutputNamer.defaultTemplate) {
        self.directory = URL(fileURLWithPath: directory).standardizedFileURL
        self.template = template
    }

    /// The output path for `input`; `explicit` is a manifest's own output name (also kept inside).
    func path(for input: BatchInput, index: Int, preset: String, fileExtension: String) -> String {
        let source = URL(fileURLWithPath: input.path)
        let name = Self.clean(source.deletingPathExtension().lastPathComponent)
        var dir = ""
        if let root = input.root {
            let parent = source.deletingLastPathComponent().standardizedFileURL.path
            if parent.hasPrefix(root) { dir = String(parent.dropFirst(root.count)) }
        }
        let relative: String
        if let explicit = input.output {
            relative = explicit
        } else {
            relative = template
                .replacingOccurrences(of: "{name}", with: name)
                .replacingOccurrences(of: "{ext}", with: Self.clean(fileExtension))
                .replacingOccurrences(of: "{preset}", with: Self.clean(preset))
                .replacingOccurrences(of: "{index}", with: String(index))
                .replacingOccurrences(of: "{dir}", with: dir)
        }
        // Rebuild the path from its safe components only.
        let components = relative.split(separator: "/").map(String.init).filter { !$0.isEmpty && $0 != "." && $0 != ".." }
        let safe = components.isEmpty ? ["\(name).\(fileExtension)"] : components
        return safe.reduce(directory) { $0.appendingPathComponent($1) }.path
    }

    /// A file-name component with separators and control characters replaced.
    static func clean(_ component: String) -> String {
        let mapped = component.map { c -> Character in
            c == "/" || c == "\\" || c.asciiValue.map { $0 < 0x20 } == true ? "_" : c
        }
        let text = String(mapped)
        return text == ".." || text == "." || text.isEmpty ? "_" : text
    }
}
