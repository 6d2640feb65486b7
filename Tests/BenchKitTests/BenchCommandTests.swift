import BenchKit
import Foundation
import Testing
import VATestSupport

/// `vaf bench` as CI runs it: the quick matrix under SoftVA on a virtual display, its JSON
/// checked against the schema documented in Benchmarks/BENCH.md.
@Suite(.serialized) struct BenchCommandTests {
    static let packageRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    /// The `vaf` built beside the test bundle, else under .build/debug.
    static var vaf: String {
        let exe = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? CommandLine.arguments[0]
        let beside = URL(fileURLWithPath: exe).deletingLastPathComponent().appendingPathComponent("vaf").path
        return FileManager.default.isExecutableFile(atPath: beside) ? beside : packageRoot.appendingPathComponent(".build/debug/vaf").path
    }

    /// The JSON Schema between the markers of Benchmarks/BENCH.md.
    static func documentedSchema() throws -> JSONSchemaSubset {
        let text = try String(contentsOf: packageRoot.appendingPathComponent("Benchmarks/BENCH.md"), encoding: .utf8)
        let begin = try #require(text.range(of: "<!-- bench-schema:begin -->"))
        let end = try #require(text.range(of: "<!-- bench-schema:end -->"))
        let block = text[begin.upperBound..<end.lowerBound]
        let open = try #require(block.range(of: "```json"))
        let close = try #require(block.range(of: "```", options: .backwards))
        return try JSONSchemaSubset(json: Data(block[open.upperBound..<close.lowerBound].utf8))
    }

    @Test func theDocumentedSchemaCatchesWrongDocuments() throws {
        let schema = try Self.documentedSchema()
        #expect(!schema.violations(of: [String: Any]()).isEmpty, "an empty object lacks every required key")
        let wrong: [String: Any] = ["schemaVersion": "1", "createdAt": "now", "settings": [:], "machine": [:], "sources": [], "jobs": [],
                                    "ratios": [], "targets": [], "extra": true]
        let problems = schema.violations(of: wrong)
        #expect(problems.contains { $0.hasPrefix("$.schemaVersion: expected integer") })
        #expect(problems.contains { $0.contains("unexpected key \"extra\"") })
        #expect(problems.contains { $0.hasPrefix("$.settings: missing required key \"runs\"") })
    }

    @Test func quickRunOnSoftVAWritesAValidReport() throws {
        let env = try SoftVAEnvironment.start()
        defer { env.stop() }
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("vaf-bench-test-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: dir) }
        let report = dir.appendingPathComponent("report")
        let result = try env.run(Self.vaf, ["bench", "--quick", "--device", env.display.name, "--work-dir", dir.appendingPathComponent("work").path,
                                            "--report-dir", report.path])
        #expect(result.status == 0, "\(result.stderr.suffix(2000))")
        #expect(result.stdout.contains("360p30/h264") && result.stdout.contains("targets"), "\(result.stdout)")

        let data = try Data(contentsOf: report.appendingPathComponent("bench.json"))
        let document = try JSONSerialization.jsonObject(with: data)
        let problems = try Self.documentedSchema().violations(of: document)
        #expect(problems.isEmpty, "\(problems.joined(separator: "\n"))")

        let decoded = try JSONDecoder().decode(BenchReport.self, from: data)
        #expect(decoded.settings.quick && decoded.settings.runs == 3 && decoded.settings.warmups == 1)
        #expect(decoded.machine.driver == "libsoftva" && decoded.machine.deviceLabel == "CPU-emulated (SoftVA)")
        #expect(decoded.sources.map(\.id) == ["360p30"])
        func path(_ job: String, _ name: String) -> PathResult? { decoded.jobs.first { $0.id == job }?.paths.first { $0.path == name } }
        for job in ["360p30/h264", "360p30/remux"] {
            let software = try #require(path(job, "software"))
            #expect(software.status == .measured, "\(job): \(software.reason ?? "")")
            #expect(software.runs.count == 3 && software.runs.map(\.round) == [0, 1, 2])
            #expect((software.fps?.median ?? 0) > 0 && (software.peakRSSBytes?.median ?? 0) > 0)
            #expect(software.quality != nil, "\(software.qualityProblem ?? "")")
        }
        #expect(path("360p30/remux", "software")?.quality?.psnr == QualityMeter.psnrCap, "a remux is bit-exact")
        // What each row must be on SoftVA (JPEG and H.264 decode and encode, VPP): every row that
        // SoftVA can run is measured, not skipped.
        let expected: [String: PathResult.Status] = [
            "360p30/h264 software": .measured, "360p30/h264 hybrid": .measured, "360p30/h264 ffmpeg": .measured,
            // H.264 decode, VPP and h264_vaapi all on SoftVA.
            "360p30/h264 hardware": .measured, "360p30/h264 ffmpeg-vaapi": .measured,
            "360p30/remux software": .measured, "360p30/remux ffmpeg": .measured,
            "360p30/remux hybrid": .skipped, "360p30/remux hardware": .skipped, "360p30/remux ffmpeg-vaapi": .skipped,
            "360p30/jpeg software": .measured, "360p30/jpeg hybrid": .measured, "360p30/jpeg hardware": .measured,
            "360p30/jpeg ffmpeg": .measured, "360p30/jpeg ffmpeg-vaapi": .measured,
        ]
        let rows = decoded.jobs.flatMap { job in job.paths.map { ("\(job.id) \($0.path)", $0) } }
        #expect(Set(rows.map(\.0)) == Set(expected.keys), "\(rows.map(\.0))")
        for (row, p) in rows {
            #expect(p.status == expected[row], "\(row): \(p.status) \(p.reason ?? "")")
            if p.status != .measured { #expect(!(p.reason ?? "").isEmpty, "\(row) says why") }
        }
        for job in decoded.jobs {
            for p in job.paths where ["hybrid", "hardware", "ffmpeg-vaapi"].contains(p.path) {
                #expect(p.label == "CPU-emulated (SoftVA)", "\(job.id) \(p.path)")
            }
            // Once the hardware export path exists, the full-hardware row must be what it says and move no picture through host memory.
            if let hardware = job.paths.first(where: { $0.path == "hardware" }), hardware.status == .measured {
                #expect(hardware.actualPath == "hardware")
                #expect(hardware.hostTransferBytes == 0, "\(job.id): \(hardware.hostTransferBytes ?? -1) host bytes")
            }
        }
        // H.264 → H.264 entirely on SoftVA: decode, VPP scale and h264_vaapi (lossless I_PCM), no host copy.
        let h264Hardware = try #require(path("360p30/h264", "hardware"))
        print("softva: bench 360p30/h264 hardware: \(h264Hardware.actualPath ?? "?"), host bytes \(h264Hardware.hostTransferBytes ?? -1), "
              + "PSNR \(h264Hardware.quality?.psnr ?? -1) dB")
        #expect(h264Hardware.actualPath == "hardware")
        #expect(h264Hardware.quality != nil, "\(h264Hardware.qualityProblem ?? "")")
        let csv = try String(contentsOf: report.appendingPathComponent("bench.csv"), encoding: .utf8)
        #expect(csv.hasPrefix(BenchReport.csvColumns.joined(separator: ",")))
        #expect(csv.split(separator: "\n").count == 1 + decoded.jobs.reduce(0) { $0 + $1.paths.count })
        let svg = try String(contentsOf: report.appendingPathComponent("bench.svg"), encoding: .utf8)
        #expect(svg.hasPrefix("<svg xmlns=\"http://www.w3.org/2000/svg\"") && svg.hasSuffix("</svg>\n"))
    }

    @Test func badArgumentsAreOneLineAndExit64() throws {
        for arguments in [["--runs", "0"], ["--targets", "h265"], ["--paths", "gpu"], ["--sources", "8k"], ["--source-codec", "vp9"],
                          ["--input", "/nonexistent.mov"], ["--sources", "none"]] {
            let result = try ProcessResult.run(Self.vaf, ["bench"] + arguments)
            #expect(result.status == 64, "\(arguments): \(result.stderr)")
            #expect(result.stderr.hasPrefix("Error: "), "\(arguments): \(result.stderr)")
        }
    }
}
