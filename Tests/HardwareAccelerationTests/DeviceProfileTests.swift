import Foundation
import HardwareAcceleration
import Testing

struct DeviceProfileTests {
    /// The committed profiles that come from a vainfo fixture (SoftVA's own `softva*` profiles do not).
    static func committedProfiles() throws -> [(name: String, text: String)] {
        let dir = Fixtures.profilesDirectory
        return try FileManager.default.contentsOfDirectory(atPath: dir.path)
            .filter { $0.hasSuffix(".profile") && !$0.hasPrefix("softva") }
            .sorted()
            .map { ($0, try String(contentsOf: dir.appendingPathComponent($0), encoding: .utf8)) }
    }

    @Test func committedProfilesEqualTheConverterOutput() throws {
        let profiles = try Self.committedProfiles()
        #expect(profiles.count == 10)
        #expect(profiles.count == (try Fixtures.vainfoFiles()).count, "one profile per vainfo fixture")
        for (file, text) in profiles {
            let firstLine = String(text.prefix { $0 != "\n" })
            let source = try #require(firstLine.firstRange(of: "shared/hardware/vainfo/").map { range in
                String(firstLine[range.upperBound...].prefix { $0 != " " })
            }, "\(file) has no source line")
            #expect(file == source.replacingOccurrences(of: ".txt", with: ".profile"))
            #expect(try Fixtures.capture(source).profile.text == text, "\(file) drifted from \(source); regenerate it")
        }
    }

    @Test func everyVainfoFixtureHasACommittedProfile() throws {
        let names = Set(try Self.committedProfiles().map(\.name))
        for file in try Fixtures.vainfoFiles() {
            #expect(names.contains(file.replacingOccurrences(of: ".txt", with: ".profile")), "\(file)")
        }
    }

    @Test func committedProfilesReadBackAndRoundTrip() throws {
        for (file, text) in try Self.committedProfiles() {
            let profile = try DeviceProfile(profileText: text, file: file)
            #expect(profile.text == text, "\(file)")
            #expect(profile.comments.first?.hasPrefix("source: ") == true, "\(file)")
            #expect((profile.initFailure == nil) == (profile.capabilities != nil), "\(file)")
        }
    }

    @Test func writerFollowsTheSharedFormat() throws {
        let pair = DeviceProfile.Pair(.h264Main, .encSliceLP)
        let profile = DeviceProfile(
            name: "example", comments: ["source: made up"], vendor: "Vendor  with  spaces ()", driver: "iHD", api: "1.16",
            configs: [DeviceProfile.Pair(.h264Main, .vld), pair],
            attributes: [.init(pair: pair, type: .rtFormat, value: 1)])
        #expect(profile.text == """
            # source: made up
            name example
            vendor Vendor  with  spaces ()
            driver iHD
            api 1.16
            config VAProfileH264Main VAEntrypointVLD
            config VAProfileH264Main VAEntrypointEncSliceLP
            attr VAProfileH264Main VAEntrypointEncSliceLP VAConfigAttribRTFormat 0x00000001

            """)
        #expect(try DeviceProfile(profileText: profile.text, file: "example.profile") == profile)

        let failing = DeviceProfile(name: "broken", initFailure: .init(status: .unknown, message: "libva error: x init failed"))
        #expect(failing.text == "name broken\ninit-failure VA_STATUS_ERROR_UNKNOWN libva error: x init failed\n")
        #expect(try DeviceProfile(profileText: failing.text, file: "broken.profile") == failing)
    }

    @Test(arguments: [
        ("name a\nbogus line\n", "p.profile:2: unknown record 'bogus'"),
        ("config VAProfileH264Main VAEntrypointVLD\n", "p.profile: no 'name' line"),
        ("name a\nattr VAProfileH264Main VAEntrypointVLD VAConfigAttribRTFormat 0x1\n", "p.profile:2: 'attr' for VAProfileH264Main VAEntrypointVLD before its 'config' line"),
        ("name a\nconfig VAProfileH264Main VAEntrypointVLD\nattr VAProfileH264Main VAEntrypointVLD VAConfigAttribRTFormat 12\n",
         "p.profile:3: 'attr' takes a VAProfile, a VAEntrypoint, a VAConfigAttrib name and a 0x hex value"),
        ("name a\ninit-failure VA_STATUS_BOGUS oops\n", "p.profile:2: 'init-failure' takes a VA_STATUS name and a message"),
    ])
    func badProfilesAreRejectedWithFileAndLine(text: String, message: String) {
        do {
            _ = try DeviceProfile(profileText: text, file: "p.profile")
            Issue.record("accepted: \(text)")
        } catch {
            #expect(error.description == message)
        }
    }

    @Test func unknownNamesRoundTrip() throws {
        let text = "name future\nconfig VAProfileVVCMain10 VAEntrypointVLD\n"
        let profile = try DeviceProfile(profileText: text, file: "future.profile")
        #expect(profile.configs.first?.profile.isKnown == false)
        #expect(profile.text == text)
        #expect(VideoProfile(code: 99).rawValue == "VAProfile(99)")
        #expect(VideoProfile(code: 99).code == 99)
        #expect(VideoProfile(code: 6) == .h264Main)
        #expect(Entrypoint(code: 8) == .encSliceLP)
        #expect(VAError.Status(name: "VA_STATUS_ERROR_UNKNOWN") == .unknown)
        #expect(VAError.Status(rawValue: 0x77).name == "VAStatus(0x77)")
    }
}
