import CatalogKit
import CatalogTestSupport
import Foundation
import Testing

/// Which published variant answers a request, and how app versions compare.
@Suite struct VariantTests {
    static func version(_ text: String) -> AppVersion {
        guard let version = AppVersion(text) else {
            Issue.record("'\(text)' should be an app version")
            return .zero
        }
        return version
    }

    /// iOS and macOS distinguished; bands from 0.0, 2.0 and 3.1.
    static let selector = VariantSelector(platforms: [.iOS, .macOS], bands: [.zero, version("2.0"), version("3.1")])

    @Test(
        arguments: [
            // No parameters: the default variant.
            (nil, nil, nil, nil),
            // A platform the app does not distinguish gets the unnarrowed platform.
            (Platform.tvOS, nil, nil, nil),
            (.watchOS, "2.5", nil, "2.0"),
            (.iOS, nil, Platform.iOS, nil),
            (.macOS, nil, .macOS, nil),
            // Below the first band's bound there is nothing lower: the first band starts at 0.0.
            (.iOS, "0.1", .iOS, "0.0"),
            (.iOS, "1.9.9", .iOS, "0.0"),
            // Exactly on a bound, however it is spelled.
            (.iOS, "2", .iOS, "2.0"),
            (.iOS, "2.0.0", .iOS, "2.0"),
            (.iOS, "3.1", .iOS, "3.1"),
            // Between bounds.
            (.iOS, "2.5", .iOS, "2.0"),
            (.macOS, "3.0.9", .macOS, "2.0"),
            // Above the last bound, compared numerically (10 > 3, although "10" < "3" as text).
            (.iOS, "3.1.1", .iOS, "3.1"),
            (.iOS, "10.0", .iOS, "3.1"),
            (nil, "0", nil, "0.0"),
        ] as [(Platform?, String?, Platform?, String?)])
    func selectsTheVariantThatServesARequest(platform: Platform?, appVersion: String?, expectedPlatform: Platform?, expectedBand: String?) {
        let chosen = Self.selector.variant(platform: platform, appVersion: appVersion.map(Self.version))
        #expect(chosen == Variant(platform: expectedPlatform, band: expectedBand.map(Self.version)))
        #expect(chosen.description == "\(expectedPlatform?.rawValue ?? "any")/\(expectedBand ?? "any")")
    }

    @Test func withoutBandsTheVersionIsIgnored() {
        let selector = VariantSelector(platforms: [.iOS], bands: [])
        #expect(selector.variant(platform: .iOS, appVersion: Self.version("9.9")) == Variant(platform: .iOS, band: nil))
        #expect(selector.variants == [.all, Variant(platform: .iOS, band: nil)])
    }

    @Test func withoutPlatformsThePlatformIsIgnored() {
        let selector = VariantSelector(platforms: [], bands: [.zero, Self.version("2")])
        #expect(selector.variant(platform: .iOS, appVersion: Self.version("2.1")) == Variant(platform: nil, band: Self.version("2.0")))
        #expect(selector.variant(platform: .iOS, appVersion: nil) == .all)
        #expect(selector.variants == [.all, Variant(platform: nil, band: .zero), Variant(platform: nil, band: Self.version("2"))])
    }

    @Test func variantsListTheDefaultFirst() {
        let bands: [AppVersion?] = [nil, .zero, Self.version("2.0"), Self.version("3.1")]
        let expected = [nil, Platform.iOS, .macOS].flatMap { platform in bands.map { Variant(platform: platform, band: $0) } }
        #expect(Self.selector.variants == expected)
        #expect(
            Self.selector.variants.map(\.description) == [
                "any/any", "any/0.0", "any/2.0", "any/3.1",
                "ios/any", "ios/0.0", "ios/2.0", "ios/3.1",
                "macos/any", "macos/0.0", "macos/2.0", "macos/3.1",
            ])
        #expect(Self.selector.variants == Self.selector.variants.sorted())
        #expect(Self.selector.variants.first == .all)
    }

    /// The bands come from the minimum versions the products name; equal spellings are one band
    /// and 0 adds none, since the first band already starts there.
    @Test func bandsAndPlatformsComeFromTheDefinitions() throws {
        try withCatalog { catalog in
            let product = { (id: String, version: String) in
                "<key>id</key>\n<string>com.example.game.\(id)</string>\n<key>minimumAppVersion</key>\n<string>\(version)</string>"
            }
            try catalog.write(
                "com.example.game.plist",
                productsPlist(
                    product("a", "2"), product("b", "2.0.0"), product("c", "1.5"), product("d", "0"),
                    "<key>id</key>\n<string>com.example.game.e</string>\n<key>platforms</key>\n<array>\n\t<string>tvOS</string>\n\t<string>iOS</string>\n</array>"
                ))
            let validation = catalog.workflow.validate()
            #expect(validation.diagnostics.map(\.description) == [])
            let app = try #require(validation.catalogs.first)
            let selector = VariantSelector(catalog: app)
            #expect(selector.platforms == [.iOS, .tvOS])
            #expect(selector.bands == [.zero, Self.version("1.5"), Self.version("2")])
            #expect(selector.bands.map(\.description) == ["0.0", "1.5", "2.0"])
        }
    }

    @Test func noMinimumVersionsMeanNoBands() throws {
        try withCatalog { catalog in
            try catalog.write("com.example.game.plist", plist("<array>\n\t<string>com.example.game.a</string>\n</array>"))
            let app = try #require(catalog.workflow.validate().catalogs.first)
            let selector = VariantSelector(catalog: app)
            #expect(selector.platforms == [])
            #expect(selector.bands == [])
            #expect(selector.variants == [.all])
        }
    }

    // MARK: - AppVersion

    @Test(arguments: [
        ("2", "2.0.0"),
        ("2", "2.0"),
        ("1.0.0.0", "1"),
        ("02.1", "2.1"),
        ("0", "0.0.0.0"),
    ])
    func equalVersions(left: String, right: String) {
        #expect(Self.version(left) == Self.version(right))
        #expect(Self.version(left).hashValue == Self.version(right).hashValue)
        #expect(!(Self.version(left) < Self.version(right)))
        #expect(!(Self.version(right) < Self.version(left)))
    }

    @Test(arguments: [
        ("2.3", "2.3.1"),
        ("2.9", "2.10"),
        ("1.9.9", "2"),
        ("0.0.1", "0.1"),
        ("1.2.3.4", "1.2.3.5"),
        ("0", "0.0.0.1"),
        ("999999999", "999999999.1"),
    ])
    func orderedVersions(lower: String, higher: String) {
        #expect(Self.version(lower) < Self.version(higher))
        #expect(!(Self.version(higher) < Self.version(lower)))
        #expect(Self.version(lower) != Self.version(higher))
    }

    @Test(arguments: ["", "1..2", "a.b", "1.2.3.4.5", "-1", "+1", " 1", "1 ", "1.", ".1", "1.2a", "v1", "1,2", "١", "1234567890", "1.0x10"])
    func invalidVersions(text: String) {
        #expect(AppVersion(text) == nil)
    }

    @Test(arguments: [
        ("2", "2.0"),
        ("2.3.1", "2.3.1"),
        ("2.0.0", "2.0"),
        ("2.3.0", "2.3"),
        ("0", "0.0"),
        ("1.0.0.1", "1.0.0.1"),
        ("02.10", "2.10"),
    ])
    func normalizedDescription(text: String, description: String) {
        #expect(Self.version(text).description == description)
        #expect(Self.version(text).components == Self.version(description).components)
    }

    @Test func zeroIsBelowEveryOtherVersion() {
        #expect(AppVersion.zero == Self.version("0"))
        #expect(AppVersion.zero < Self.version("0.0.0.1"))
        #expect(AppVersion.zero.description == "0.0")
    }

    // MARK: - Variant

    @Test func variantKeys() {
        #expect(Variant.all.platformKey == "any")
        #expect(Variant.all.bandKey == "any")
        #expect(Variant.all.description == "any/any")
        let variant = Variant(platform: .visionOS, band: Self.version("2.3.0"))
        #expect(variant.platformKey == "visionos")
        #expect(variant.bandKey == "2.3")
        #expect(variant.description == "visionos/2.3")
    }

    @Test(arguments: [
        ("ios", Platform.iOS), ("IOS", .iOS), ("macOS", .macOS), ("tvos", .tvOS), ("WATCHOS", .watchOS), ("visionOS", .visionOS),
    ])
    func platformNames(name: String, platform: Platform) {
        #expect(Platform(name: name) == platform)
    }

    @Test func platformSpellings() {
        #expect(Platform.allCases.map(\.name) == ["iOS", "macOS", "tvOS", "watchOS", "visionOS", "Android"])
        #expect(Platform.allCases.map(\.rawValue) == ["ios", "macos", "tvos", "watchos", "visionos", "android"])
        #expect(Platform(name: "android") == .android)
        #expect(Platform(name: "ANDROID") == .android)
        #expect(Platform(name: "fireos") == nil)
        #expect(Platform(name: "iPadOS") == nil)
    }
}
