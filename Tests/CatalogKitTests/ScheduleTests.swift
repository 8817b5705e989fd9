import CatalogKit
import CatalogTestSupport
import Foundation
import Testing
import Time

/// Scheduled availability (docs/contract.md section 2): a build publishes what the feeds become at each
/// moment ahead, and the feed index switches on time, with Last-Modified equal to the moment.
@Suite struct ScheduleTests {
    static let opens = Timestamp(iso8601: "2026-04-01T00:00:00Z")!
    static let closes = Timestamp(iso8601: "2026-05-01T00:00:00Z")!
    static let source = plist(
        """
        <dict>
        \t<key>products</key>
        \t<array>
        \t\t<dict><key>id</key><string>com.example.timed.always</string></dict>
        \t\t<dict><key>id</key><string>com.example.timed.easter</string>
        \t\t\t<key>availableFrom</key><date>2026-04-01T00:00:00Z</date>
        \t\t\t<key>availableUntil</key><date>2026-05-01T00:00:00Z</date></dict>
        \t\t<dict><key>id</key><string>com.example.timed.far</string>
        \t\t\t<key>availableFrom</key><date>2028-01-01T00:00:00Z</date></dict>
        \t</array>
        </dict>
        """)

    private func ids(_ index: FeedIndex, at moment: Timestamp) throws -> String? {
        text(try index.feed(app: "com.example.timed", kind: .products, platform: nil, appVersion: nil, at: moment).get().identity.bytes)
    }

    @Test func feedsSwitchOnTimeWithLastModifiedAtTheSwitch() throws {
        let catalog = try TemporaryCatalog()
        defer { try? FileManager.default.removeItem(at: catalog.root) }
        try catalog.write("com.example.timed.plist", Self.source)
        let plan = try #require(try catalog.publish(at: buildMoment).first)
        #expect(plan.scheduledChanges == [Self.opens, Self.closes])
        // 2028 is beyond the horizon: the build says a later build is needed before it.
        #expect(plan.scheduleEndsBefore == Timestamp(iso8601: "2028-01-01T00:00:00Z"))

        let (index, problems) = FeedIndex.load(catalog.tree)
        #expect(problems.isEmpty)
        #expect(try ids(index, at: Self.opens.adding(-1)) == #"["com.example.timed.always"]"#)
        #expect(try ids(index, at: Self.opens) == #"["com.example.timed.always","com.example.timed.easter"]"#)
        #expect(try ids(index, at: Self.closes.adding(-1)) == #"["com.example.timed.always","com.example.timed.easter"]"#)
        #expect(try ids(index, at: Self.closes) == #"["com.example.timed.always"]"#)

        let during = try index.feed(app: "com.example.timed", kind: .products, platform: nil, appVersion: nil, at: Self.opens.adding(60))
            .get()
        #expect(during.lastModified == Self.opens)
        // What the server sends as Last-Modified once its clock has passed the switch (FeedResponseTests).
        #expect(during.lastModifiedHeader == "Wed, 01 Apr 2026 00:00:00 GMT")
        // After the window the bytes are those of before it, but they changed at the close.
        let after = try index.feed(app: "com.example.timed", kind: .products, platform: nil, appVersion: nil, at: Self.closes).get()
        #expect(after.lastModified == Self.closes)

        // The static tree holds the state at build time.
        #expect(catalog.published("v1/apps/com.example.timed/products.json") == Array(#"["com.example.timed.always"]"#.utf8))
    }

    @Test func rebuildingBeforeTheSwitchPublishesNothing() throws {
        let catalog = try TemporaryCatalog()
        defer { try? FileManager.default.removeItem(at: catalog.root) }
        try catalog.write("com.example.timed.plist", Self.source)
        try catalog.publish(at: buildMoment)
        let again = try #require(try catalog.publish(at: buildMoment.adding(3600)).first)
        #expect(again.isUnchanged)
        #expect(again.revision == 1)
    }

    @Test func rebuildingAfterTheSwitchMovesLastModifiedForward() throws {
        let catalog = try TemporaryCatalog()
        defer { try? FileManager.default.removeItem(at: catalog.root) }
        try catalog.write("com.example.timed.plist", Self.source)
        try catalog.publish(at: buildMoment)
        let later = Self.opens.adding(3600)
        let plan = try #require(try catalog.publish(at: later).first)
        #expect(!plan.isUnchanged)
        #expect(plan.scheduledChanges == [Self.closes])
        let manifest = try #require(try catalog.tree.currentManifest("com.example.timed"))
        #expect(manifest.variants[0].products.lastModified == later)
    }
}

extension ScheduleTests {
    /// A rebuild in the very second a scheduled switch happened gives changed bytes a
    /// Last-Modified after the switch, which clients may already hold.
    @Test func rebuildingAtTheSwitchMovesPastIt() throws {
        let catalog = try TemporaryCatalog()
        defer { try? FileManager.default.removeItem(at: catalog.root) }
        try catalog.write("com.example.timed.plist", Self.source)
        try catalog.publish(at: buildMoment)
        try catalog.write(
            "com.example.timed.plist",
            Self.source.replacingOccurrences(
                of: "<dict><key>id</key><string>com.example.timed.always</string></dict>",
                with:
                    "<dict><key>id</key><string>com.example.timed.always</string></dict><dict><key>id</key><string>com.example.timed.extra</string></dict>"
            ))
        let plan = try #require(try catalog.publish(at: Self.opens).first)
        #expect(!plan.isUnchanged)
        let manifest = try #require(try catalog.tree.currentManifest("com.example.timed"))
        #expect(manifest.variants[0].products.lastModified == Self.opens.adding(1))
    }
}
