import Foundation
import Testing
import VATestSupport

/// `vaf probe --device :N --json` on SoftVA impersonating each real device agrees with
/// `vaf probe --from-vainfo` of that device's real vainfo output.
///
/// This is a consistency check between our two probe paths (our VainfoParser is on the real side),
/// not an independent oracle: SoftVATests/PersonalityVainfoTextTests compares each personality, as
/// the real `vainfo` program prints it, with the real device's vainfo text.
@Suite(.serialized)
struct LiveProbeOnSoftVATests {
    /// Every committed real-device profile (all but SoftVA's own) is impersonated.
    @Test func everyRealDeviceProfileIsCovered() throws {
        #expect(LiveProbe.profiles.count == 10, "\(LiveProbe.profiles)")
        let vainfo = try #require(LiveProbe.vainfoDirectory, "CI always has ../shared/hardware/vainfo")
        for name in LiveProbe.profiles {
            #expect(FileManager.default.fileExists(atPath: vainfo.appendingPathComponent("\(name).txt").path), "\(name) has no vainfo source")
        }
    }

    @Test(arguments: LiveProbe.profiles)
    func livePersonalityMatchesTheRealOutput(_ name: String) throws {
        let env = try SoftVAEnvironment.start()
        defer { env.stop() }
        let profile = LiveProbe.root.appendingPathComponent("Hardware/Profiles/\(name).profile").path
        let vainfo = try #require(LiveProbe.vainfoDirectory, "CI always has ../shared/hardware/vainfo")
        let source = vainfo.appendingPathComponent("\(name).txt").path

        let vaf = try #require(VafBinary.url, "vaf is not built").path
        let live = try env.run(vaf, ["probe", "--device", env.display.name, "--json"], options: SoftVAOptions(profile: profile))
        #expect(live.status == 0, "\(live.stderr)")
        let parsed = try VafBinary.run(["probe", "--from-vainfo", source, "--json"])
        let liveDevice = try #require(LiveProbe.firstDevice(Data(live.stdout.utf8)))
        let realDevice = try #require(LiveProbe.firstDevice(Data(parsed.stdout.utf8)))

        guard let real = realDevice["capabilities"] as? [String: Any] else {
            // A device whose vaInitialize failed: the live probe must fail to initialise too.
            #expect(liveDevice["capabilities"] == nil, "\(name): SoftVA initialised a device that failed for real")
            #expect(liveDevice["diagnosis"] != nil)
            return
        }
        let mine = try #require(liveDevice["capabilities"] as? [String: Any], "\(name): \(live.stdout.prefix(400))")
        #expect(mine["vendor"] as? String == real["vendor"] as? String)
        let realConfigs = LiveProbe.configs(real)
        let liveConfigs = LiveProbe.configs(mine)
        #expect(liveConfigs.map(\.key) == realConfigs.map(\.key), "\(name): profile/entrypoint pairs differ")
        // Where the real output lists attributes (vainfo --all), the live values agree.
        for (pair, attributes) in realConfigs {
            let live = liveConfigs.first { $0.key == pair }?.attributes ?? [:]
            for (attribute, value) in attributes {
                #expect(live[attribute] == value, "\(name) \(pair) \(attribute)")
            }
        }
    }

    /// The video processor's formats are read from the list the driver points at: Intel's
    /// drivers (and SoftVA) point `VAProcPipelineCaps` at arrays of their own rather than fill the caller's.
    @Test func theVideoProcessorsFormatsAreTheDriversOwnList() throws {
        let env = try SoftVAEnvironment.start()
        defer { env.stop() }
        let vaf = try #require(VafBinary.url, "vaf is not built").path
        let live = try env.run(vaf, ["probe", "--device", env.display.name, "--json"], options: SoftVAOptions())
        #expect(live.status == 0, "\(live.stderr)")
        let device = try #require(LiveProbe.firstDevice(Data(live.stdout.utf8)))
        let capabilities = device["capabilities"] as? [String: Any]
        let pipeline = (capabilities?["videoProcessing"] as? [String: Any])?["pipeline"] as? [String: Any]
        let inputs = try #require(pipeline?["inputPixelFormats"] as? [String], "\(live.stdout.prefix(2000))")
        #expect(inputs.contains("NV12") && inputs.contains("P010") && inputs.contains("RGBA"), "\(inputs)")
        #expect((pipeline?["outputPixelFormats"] as? [String])?.contains("NV12") == true, "\(String(describing: pipeline))")
    }
}

enum LiveProbe {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    static var vainfoDirectory: URL? {
        let url = root.deletingLastPathComponent().appendingPathComponent("shared/hardware/vainfo")
        return FileManager.default.fileExists(atPath: url.path) ? url : nil
    }

    /// Every committed real-device profile (its vainfo source must be beside the checkout: each case requires it).
    /// A directory that cannot be read gives an empty list, which `everyRealDeviceProfileIsCovered` fails on.
    static var profiles: [String] {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: root.appendingPathComponent("Hardware/Profiles").path)) ?? []
        return names.filter { $0.hasSuffix(".profile") && !$0.hasPrefix("softva") }
            .map { String($0.dropLast(".profile".count)) }
            .sorted()
    }

    static func firstDevice(_ json: Data) -> [String: Any]? {
        ((try? JSONSerialization.jsonObject(with: json)) as? [String: Any]).flatMap { ($0["devices"] as? [[String: Any]])?.first }
    }

    /// "profile entrypoint" → attribute name → value, in listed order.
    static func configs(_ capabilities: [String: Any]) -> [(key: String, attributes: [String: String])] {
        (capabilities["configs"] as? [[String: Any]] ?? []).map { config in
            let key = "\(config["profile"] as? String ?? "?") \(config["entrypoint"] as? String ?? "?")"
            var attributes: [String: String] = [:]
            for attribute in config["attributes"] as? [[String: Any]] ?? [] {
                if let type = attribute["type"] as? String { attributes[type] = "\(attribute["value"] ?? "")" }
            }
            return (key, attributes)
        }
    }
}
