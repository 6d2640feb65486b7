import CVA
import Foundation
import Testing
import VATestSupport

/// A device profile file (Hardware/Profiles/<name>.profile), read the way the tests need it.
struct DeviceProfileFile {
    let path: String
    var vendor: String?
    var configs: [(profile: String, entrypoint: String)] = []
    var attributes: [(profile: String, entrypoint: String, attribute: String, value: UInt32)] = []
    var initFailure: String?

    init(path: String) throws {
        self.path = path
        for line in try String(contentsOfFile: path, encoding: .utf8).split(separator: "\n") {
            if line.hasPrefix("#") { continue }
            let fields = line.split(separator: " ", omittingEmptySubsequences: false).map(String.init)
            switch fields.first {
            case "vendor": vendor = fields.dropFirst().joined(separator: " ")
            case "config" where fields.count >= 3: configs.append((fields[1], fields[2]))
            case "attr" where fields.count >= 5:
                let hex = fields[4].hasPrefix("0x") ? String(fields[4].dropFirst(2)) : fields[4]
                if let v = UInt32(hex, radix: 16) { attributes.append((fields[1], fields[2], fields[3], v)) }
            case "init-failure": initFailure = fields.count > 1 ? fields[1] : ""
            default: break
            }
        }
    }

    /// vainfo's order: profiles in first-seen order, each with its entrypoints.
    var vainfoLines: [String] {
        var order: [String] = []
        var entrypoints: [String: [String]] = [:]
        for c in configs {
            if entrypoints[c.profile] == nil { order.append(c.profile) }
            entrypoints[c.profile, default: []].append(c.entrypoint)
        }
        return order.flatMap { p in entrypoints[p]!.map { p + " : " + $0 } }
    }

    /// Every Hardware/Profiles/*.profile of this checkout.
    static var all: [String] {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
            .deletingLastPathComponent().deletingLastPathComponent()
        let dir = root.appendingPathComponent("Hardware/Profiles").path
        let names = (try? FileManager.default.contentsOfDirectory(atPath: dir)) ?? []
        return names.filter { $0.hasSuffix(".profile") }.sorted().map { dir + "/" + $0 }
    }
}

func name(of value: UnsafePointer<CChar>?) -> String { value.map { String(cString: $0) } ?? "" }

@Suite("SoftVA impersonates every Hardware/Profiles file", .serialized)
struct ProfileFileTests {
    @Test("every committed profile is impersonated (a list that came out empty would run no case)")
    func everyProfileIsListed() {
        // Ten real-device profiles plus SoftVA's own two (native, and JPEG/VPP only).
        #expect(DeviceProfileFile.all.count == 12, "\(DeviceProfileFile.all)")
    }

    @Test("vainfo lists the profile's configs and vendor; vaGetConfigAttributes returns its attr values",
          arguments: DeviceProfileFile.all)
    func impersonates(path: String) throws {
        let profile = try DeviceProfileFile(path: path)
        let env = try SoftVAEnvironment.start()
        defer { env.stop() }
        let options = SoftVAOptions(profile: path)
        let r = try env.run(Tools.vainfo, ["--display", "x11"], options: options)
        #expect(!r.signalled)
        if profile.initFailure != nil {
            #expect(r.status != 0)
            #expect(r.stderr.contains("init failed"))
            return
        }
        #expect(r.succeeded, "vainfo: \(r.stderr)")
        #expect(profileEntrypointLines(r.stdout) == profile.vainfoLines)
        if let vendor = profile.vendor {
            #expect(r.stdout.contains("vainfo: Driver version: \(vendor)\n"))
        }
        guard !profile.attributes.isEmpty else { return }
        let va = try LibVASession(env, options: options)
        defer { va.terminate() }
        // libva's names for the enum values, to map the file's names back.
        func profileValue(_ s: String) -> VAProfile? {
            (-1..<64).lazy.map { VAProfile(rawValue: $0) }.first { name(of: vaProfileStr($0)) == s }
        }
        func entrypointValue(_ s: String) -> VAEntrypoint? {
            (1..<64).lazy.map { VAEntrypoint(rawValue: UInt32($0)) }.first { name(of: vaEntrypointStr($0)) == s }
        }
        func attributeValue(_ s: String) -> VAConfigAttribType? {
            (0..<128).lazy.map { VAConfigAttribType(rawValue: UInt32($0)) }.first { name(of: vaConfigAttribTypeStr($0)) == s }
        }
        for a in profile.attributes {
            let p = try #require(profileValue(a.profile)), e = try #require(entrypointValue(a.entrypoint))
            let t = try #require(attributeValue(a.attribute))
            var attribute = VAConfigAttrib(type: t, value: 0)
            #expect(vaGetConfigAttributes(va.display, p, e, &attribute, 1) == VA_STATUS_SUCCESS)
            #expect(attribute.value == a.value, "\(a.profile) \(a.entrypoint) \(a.attribute)")
        }
    }
}
