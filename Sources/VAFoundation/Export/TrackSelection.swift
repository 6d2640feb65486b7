import Foundation

/// Which of a source's tracks of one kind an export keeps (HandBrake's `--all-audio`,
/// `--audio-lang-list`, `--all-subtitles`).
public enum TrackSelection: Sendable, Hashable {
    /// None of them.
    case none
    /// The track the source plays by default (the first when none is marked).
    case `default`
    /// Every track.
    case all
    /// The tracks in these languages (ISO 639-2 "fra" or "fre", or ISO 639-1 "fr"), in the source's order.
    case languages([String])
    /// The tracks with these IDs (as `vaf info` numbers them), in the source's order.
    case trackIDs([Int])

    /// The tracks of `candidates` this selection keeps, in their order.
    func select(_ candidates: [AssetTrack]) -> [AssetTrack] {
        switch self {
        case .none: return []
        case .all: return candidates
        case .default: return (candidates.first { $0.isEnabled } ?? candidates.first).map { [$0] } ?? []
        case .languages(let codes):
            let wanted = Set(codes.map(Self.normalizedLanguage))
            return candidates.filter { track in track.languageCode.map { wanted.contains(Self.normalizedLanguage($0)) } ?? false }
        case .trackIDs(let ids):
            return candidates.filter { ids.contains($0.trackID) }
        }
    }

    /// How the selection reads on a command line ("fra,eng", "all").
    public var description: String {
        switch self {
        case .none: "none"
        case .default: "default"
        case .all: "all"
        case .languages(let codes): codes.joined(separator: ",")
        case .trackIDs(let ids): ids.map(String.init).joined(separator: ",")
        }
    }

    /// Parses "none", "default", "all", a list of languages ("eng,fra") or of track IDs ("2,3");
    /// nil for anything else.
    public init?(argument: String) {
        let text = argument.trimmingCharacters(in: .whitespaces).lowercased()
        switch text {
        case "none": self = .none
        case "default": self = .default
        case "all": self = .all
        default:
            let items = text.split(separator: ",", omittingEmptySubsequences: false).map { $0.trimmingCharacters(in: .whitespaces) }
            if items.allSatisfy({ Int($0).map { $0 > 0 } ?? false }) {
                self = .trackIDs(items.compactMap { Int($0) })
            } else if items.allSatisfy({ (2...3).contains($0.count) && $0.allSatisfy { $0.isLetter && $0.isASCII } }) {
                self = .languages(items)
            } else {
                return nil
            }
        }
    }

    /// One spelling per language: ISO 639-1 codes and ISO 639-2's bibliographic codes ("fre",
    /// "ger", as Matroska files often carry) become the terminology codes MP4 stores ("fra", "deu").
    static func normalizedLanguage(_ code: String) -> String {
        let code = code.lowercased()
        return bibliographic[code] ?? twoLetter[code] ?? code
    }

    private static let bibliographic = [
        "alb": "sqi", "arm": "hye", "baq": "eus", "bur": "mya", "chi": "zho", "cze": "ces", "dut": "nld", "fre": "fra",
        "geo": "kat", "ger": "deu", "gre": "ell", "ice": "isl", "mac": "mkd", "mao": "mri", "may": "msa", "per": "fas",
        "rum": "ron", "slo": "slk", "tib": "bod", "wel": "cym",
    ]

    private static let twoLetter = [
        "ar": "ara", "bg": "bul", "ca": "cat", "cs": "ces", "da": "dan", "de": "deu", "el": "ell", "en": "eng", "es": "spa",
        "et": "est", "eu": "eus", "fa": "fas", "fi": "fin", "fr": "fra", "he": "heb", "hi": "hin", "hr": "hrv", "hu": "hun",
        "id": "ind", "is": "isl", "it": "ita", "ja": "jpn", "ko": "kor", "lt": "lit", "lv": "lav", "ms": "msa", "nl": "nld",
        "no": "nor", "nb": "nob", "nn": "nno", "pl": "pol", "pt": "por", "ro": "ron", "ru": "rus", "sk": "slk", "sl": "slv",
        "sr": "srp", "sv": "swe", "th": "tha", "tr": "tur", "uk": "ukr", "vi": "vie", "zh": "zho",
    ]
}
