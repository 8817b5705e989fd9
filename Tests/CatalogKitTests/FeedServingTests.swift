import CatalogKit
import CatalogTestSupport
import Foundation
import Testing

/// The serving core without a server: a published tree loaded into a ``FeedIndex``. The responses
/// the server decides from it are in `Tests/CatalogServerTests/FeedResponseTests.swift`.
@Suite struct FeedServingTests {
    /// An app on iOS and macOS with a macOS-only product and one that needs app version 2.0.
    static let source = plist(
        """
        <dict>
        \t<key>platforms</key><array><string>iOS</string><string>macOS</string></array>
        \t<key>products</key>
        \t<array>
        \t\t<dict><key>id</key><string>com.example.serve.coins</string></dict>
        \t\t<dict><key>id</key><string>com.example.serve.mac</string><key>platforms</key><array><string>macOS</string></array></dict>
        \t\t<dict><key>id</key><string>com.example.serve.new</string><key>minimumAppVersion</key><string>2.0</string></dict>
        \t</array>
        </dict>
        """)

    private func published() throws -> (TemporaryCatalog, FeedIndex) {
        let catalog = try TemporaryCatalog()
        try catalog.write("com.example.serve.plist", Self.source)
        try catalog.publish(at: buildMoment)
        let (index, problems) = FeedIndex.load(catalog.tree)
        #expect(problems.isEmpty)
        return (catalog, index)
    }

    private func ids(_ result: Result<ServedFeed, FeedIndex.LookupError>) -> String? {
        guard case .success(let feed) = result else { return nil }
        return text(feed.identity.bytes)
    }

    @Test func parametersSelectThePublishedVariant() throws {
        let (catalog, index) = try published()
        defer { try? FileManager.default.removeItem(at: catalog.root) }
        func lookup(_ platform: String?, _ version: String?) -> String? {
            ids(index.feed(app: "com.example.serve", kind: .products, platform: platform, appVersion: version, at: buildMoment))
        }
        #expect(lookup(nil, nil) == #"["com.example.serve.coins","com.example.serve.mac","com.example.serve.new"]"#)
        #expect(lookup("ios", nil) == #"["com.example.serve.coins","com.example.serve.new"]"#)
        #expect(lookup("iOS", "1.9") == #"["com.example.serve.coins"]"#)
        #expect(lookup("macos", "2.0.0") == #"["com.example.serve.coins","com.example.serve.mac","com.example.serve.new"]"#)
        #expect(lookup(nil, "1.0") == #"["com.example.serve.coins","com.example.serve.mac"]"#)
        // A platform the app does not distinguish gets the unnarrowed feed.
        #expect(lookup("tvos", nil) == lookup(nil, nil))
    }

    @Test func badParametersAndUnknownAppsSayWhy() throws {
        let (catalog, index) = try published()
        defer { try? FileManager.default.removeItem(at: catalog.root) }
        let cases: [(String, String?, String?, FeedIndex.LookupError)] = [
            ("com.example.none", nil, nil, .unknownApp("com.example.none")),
            ("com.example.serve", "fireos", nil, .unknownPlatform("fireos")),
            ("com.example.serve", nil, "2.x", .malformedAppVersion("2.x")),
            ("com.example.serve", nil, "", .malformedAppVersion("")),
        ]
        for (app, platform, version, error) in cases {
            guard case .failure(let actual) = index.feed(app: app, kind: .catalog, platform: platform, appVersion: version, at: buildMoment)
            else {
                Issue.record("\(app) \(String(describing: platform)) \(String(describing: version)) found a feed")
                continue
            }
            #expect(actual == error)
        }
    }

    @Test func anAppWhoseFilesDoNotMatchItsManifestIsNotServed() throws {
        let (catalog, _) = try published()
        defer { try? FileManager.default.removeItem(at: catalog.root) }
        let file = catalog.tree.revisionDirectory("com.example.serve", 1).appendingPathComponent("products.json")
        try FileManager.default.removeItem(at: file)  // the static copy is a hard link; replace, not edit
        try Data("[\"tampered\"]".utf8).write(to: file)
        let (index, problems) = FeedIndex.load(catalog.tree)
        #expect(index.apps["com.example.serve"] == nil)
        #expect(problems.count == 1)
        #expect(problems.first?.contains("content does not match the manifest") == true)
    }
}
