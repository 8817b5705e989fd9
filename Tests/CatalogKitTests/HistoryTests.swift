import CatalogKit
import CatalogTestSupport
import Foundation
import Testing

/// History, diffs and rollback: authors and messages in manifests, field-by-field product diffs,
/// and rollbacks that republish an old revision's exact bytes as a new revision.
@Suite struct HistoryTests {
    static let app = "com.example.game"

    /// Two products with metadata, in catalog XML; `price` and `name` vary between revisions.
    static func definitions(price: String, name: String = "Coins", extra: String = "") -> String {
        catalogXML(
            app: app,
            """
            \t<platforms><platform>iOS</platform></platforms>
            \t<product id="com.example.game.coins" type="consumable" referenceName="\(name)" displayOrder="2">
            \t\t<metadata>
            \t\t\t<entry key="price" type="real">\(price)</entry>
            \t\t\t<entry key="tier" type="integer">1</entry>
            \t\t\t<entry key="title">Gold</entry>
            \t\t</metadata>
            \t</product>
            \t<product id="com.example.game.pro" type="auto-renewable" availableFrom="2026-01-01T00:00:00Z">
            \t\t<subscription group="premium" period="P1M" rank="1"/>
            \t</product>
            \(extra)
            """)
    }

    // MARK: - Authors and messages

    @Test func buildRecordsAuthorAndMessage() throws {
        try withCatalog { catalog in
            try catalog.write("\(Self.app).xml", Self.definitions(price: "0.99"))
            _ = try catalog.workflow.build(at: buildMoment, dryRun: false, note: RevisionNote(author: "alice", message: "first prices"))
            let manifest = try #require(try catalog.tree.currentManifest(Self.app))
            #expect(manifest.author == "alice")
            #expect(manifest.message == "first prices")
            #expect(manifest.rollbackOf == nil)
            #expect(try catalog.tree.manifest(Self.app, revision: 1) == manifest)
        }
    }

    /// Manifests written before authors were recorded have none of the new keys, and a build
    /// without a note still writes none: existing manifests stay byte-identical.
    @Test func manifestsWithoutAuthorOrMessageStillRead() throws {
        try withCatalog { catalog in
            try catalog.write("\(Self.app).xml", Self.definitions(price: "0.99"))
            try catalog.publish(at: buildMoment)
            let bytes = try #require(catalog.published("v1/apps/\(Self.app)/manifest.json"))
            let keys = try #require(try JSONSerialization.jsonObject(with: Data(bytes)) as? [String: Any]).keys
            #expect(Set(keys).isDisjoint(with: ["author", "message", "rollbackOf"]))

            let history = try catalog.workflow.history(app: Self.app)
            #expect(history.count == 1)
            #expect(history[0].author == nil && history[0].message == nil)
            #expect(history[0].added == 2)
        }
    }

    // MARK: - Product diffs

    static func line(_ json: String) -> (id: String, json: [UInt8]) {
        let id = (try? JSONSerialization.jsonObject(with: Data(json.utf8)) as? [String: Any])?["id"] as? String ?? ""
        return (id, Array(json.utf8))
    }

    @Test(arguments: [
        (#"{"id":"a","status":"cleared"}"#, #"{"id":"a","status":"retired"}"#, ["status cleared → retired"]),
        (#"{"id":"a","metadata":{"price":0.99}}"#, #"{"id":"a","metadata":{"price":1.99}}"#, ["metadata.price 0.99 → 1.99"]),
        (#"{"id":"a"}"#, #"{"id":"a","referenceName":"Level 2"}"#, ["referenceName added: Level 2"]),
        (#"{"id":"a","displayOrder":3}"#, #"{"id":"a"}"#, ["displayOrder removed (was 3)"]),
        (#"{"id":"a","platforms":["iOS"]}"#, #"{"id":"a","platforms":["iOS","macOS"]}"#, [#"platforms ["iOS"] → ["iOS","macOS"]"#]),
        (
            #"{"id":"a","subscription":{"group":"g","period":"P1M"},"metadata":{"on":true}}"#,
            #"{"id":"a","subscription":{"group":"g","period":"P1Y"},"metadata":{"on":false}}"#,
            ["metadata.on true → false", "subscription.period P1M → P1Y"]
        ),
    ])
    func changesAreDescribedFieldByField(old: String, new: String, details: [String]) throws {
        let diff = try ProductDiff(old: [Self.line(old)], new: [Self.line(new)])
        #expect(diff.changed.map(\.details) == [details])
        #expect(diff.added.isEmpty && diff.removed.isEmpty && diff.quarantined.isEmpty && diff.released.isEmpty)
    }

    /// A verdict is the feedback loop's, not an edit: a product whose only change is its
    /// quarantine is quarantined or released, not changed.
    @Test func quarantinesAreKeptApartFromChanges() throws {
        let diff = try ProductDiff(
            old: [Self.line(#"{"id":"a"}"#), Self.line(#"{"id":"b","quarantine":"20 installs"}"#), Self.line(#"{"id":"c"}"#)],
            new: [
                Self.line(#"{"id":"a","quarantine":"25 installs"}"#), Self.line(#"{"id":"b","type":"consumable"}"#),
                Self.line(#"{"id":"d","quarantine":"new and bad"}"#),
            ])
        #expect(diff.added == ["d"])
        #expect(diff.removed == ["c"])
        #expect(diff.changed == [ProductDiff.Change(id: "b", details: ["type added: consumable"])])
        #expect(diff.quarantined.map(\.id) == ["a", "d"])
        #expect(diff.quarantined.map(\.reason) == ["25 installs", "new and bad"])
        #expect(diff.released == ["b"])
        #expect(diff.summary == "1 added, 1 changed, 1 removed, 2 quarantined, 1 released")
    }

    /// A snapshot that names an id twice (written by hand, or by an older build) is compared by
    /// its last line, and neither of its lines is reported removed while the id is still there.
    @Test func aRepeatedIdInTheOldSnapshotIsOneProduct() throws {
        let diff = try ProductDiff(
            old: [Self.line(#"{"id":"a","type":"consumable"}"#), Self.line(#"{"id":"b"}"#), Self.line(#"{"id":"a"}"#)],
            new: [Self.line(#"{"id":"a"}"#), Self.line(#"{"id":"c"}"#)])
        #expect(diff.added == ["c"])
        #expect(diff.removed == ["b"])
        #expect(diff.changed.isEmpty)
        let gone = try ProductDiff(old: [Self.line(#"{"id":"a"}"#), Self.line(#"{"id":"a"}"#)], new: [])
        #expect(gone.removed == ["a", "a"])
    }

    // MARK: - History and diff between revisions

    /// Three revisions; history lists them newest first with the changes of each.
    @Test func historyAndDiffOfThreeRevisions() throws {
        try withCatalog { catalog in
            try catalog.write("\(Self.app).xml", Self.definitions(price: "0.99"))
            _ = try catalog.workflow.build(at: buildMoment, dryRun: false, note: RevisionNote(author: "alice", message: "launch"))
            try catalog.write("\(Self.app).xml", Self.definitions(price: "1.99", name: "Gold coins"))
            _ = try catalog.workflow.build(at: buildMoment.adding(60), dryRun: false, note: RevisionNote(author: "bob"))
            try catalog.write(
                "\(Self.app).xml",
                Self.definitions(price: "1.99", name: "Gold coins", extra: #"<product id="com.example.game.gems" type="consumable"/>"#))
            _ = try catalog.workflow.build(at: buildMoment.adding(120), dryRun: false, note: RevisionNote(author: "alice", message: "gems"))

            let history = try catalog.workflow.history(app: Self.app)
            #expect(history.map(\.revision) == [3, 2, 1])
            #expect(history.map(\.author) == ["alice", "bob", "alice"])
            #expect(history.map(\.message) == ["gems", nil, "launch"])
            #expect(history.map(\.publishedAt) == [buildMoment.adding(120), buildMoment.adding(60), buildMoment])
            #expect(history.map { [$0.added, $0.changed, $0.removed] } == [[1, 0, 0], [0, 1, 0], [2, 0, 0]])
            #expect(try catalog.workflow.history(app: Self.app, limit: 1).map(\.revision) == [3])

            let diff = try catalog.workflow.diff(app: Self.app, from: 1, to: 3, at: buildMoment.adding(180))
            #expect(diff.from == .revision(1) && diff.to == .revision(3))
            #expect(diff.diff.added == ["com.example.game.gems"])
            #expect(
                diff.diff.changed == [
                    ProductDiff.Change(
                        id: "com.example.game.coins", details: ["metadata.price 0.99 → 1.99", "referenceName Coins → Gold coins"])
                ])
            // One revision: against the current one; none: the current one against the sources.
            #expect(try catalog.workflow.diff(app: Self.app, from: 2, at: buildMoment.adding(180)).diff.added == ["com.example.game.gems"])
            let sources = try catalog.workflow.diff(app: Self.app, at: buildMoment.adding(180))
            #expect(sources.from == .revision(3) && sources.to == .sources && sources.diff.isEmpty)
        }
    }

    @Test func unknownAppsAndRevisionsAreNamed() throws {
        try withCatalog { catalog in
            try catalog.write("\(Self.app).xml", Self.definitions(price: "0.99"))
            try catalog.publish(at: buildMoment)
            #expect(throws: HistoryError.self) { try catalog.workflow.history(app: "com.example.other") }
            let error = #expect(throws: HistoryError.self) { try catalog.workflow.diff(app: Self.app, from: 1, to: 4, at: buildMoment) }
            #expect(error?.description == "'com.example.game' has no revision 4; its revisions are 1 to 1")
            #expect(throws: HistoryError.self) {
                try catalog.workflow.rollback(app: Self.app, to: 2, at: buildMoment, author: nil, message: nil)
            }
        }
    }

    // MARK: - Rollback

    /// Revision 3 republishes revision 1: every feed has revision 1's bytes and ETags (the rich
    /// feed still says revision 1, whose content it is), Last-Modified moves forward, the sources
    /// hold revision 1's content, and a plain build afterwards publishes nothing.
    @Test func rollbackRepublishesTheExactBytes() throws {
        try withCatalog { catalog in
            try catalog.write("\(Self.app).xml", Self.definitions(price: "0.99"))
            try catalog.publish(at: buildMoment)
            try catalog.write("\(Self.app).xml", Self.definitions(price: "1.99", name: "Gold coins"))
            try catalog.publish(at: buildMoment.adding(60))
            let first = try catalog.expectComplete(Self.app, revision: 1)
            let second = try catalog.expectComplete(Self.app, revision: 2)

            let rollback = try catalog.workflow.rollback(app: Self.app, to: 1, at: buildMoment.adding(120), author: "carol", message: nil)
            #expect(rollback.plan.revision == 3 && !rollback.plan.isUnchanged)
            #expect(rollback.written == "catalog/\(Self.app).plist")
            #expect(rollback.removed == ["catalog/\(Self.app).xml"])
            #expect(rollback.keptRetired.isEmpty)
            let third = try catalog.expectComplete(Self.app, revision: 3)
            #expect(third.author == "carol" && third.message == "rollback to 1" && third.rollbackOf == 1)
            #expect(third.variants.count == first.variants.count)
            for (old, new) in zip(first.variants, third.variants) {
                for name in ["products.json", "products.json.gz", "catalog.json", "catalog.json.gz"] {
                    #expect(
                        try catalog.tree.feedBytes(Self.app, revision: 3, directory: new.directory, name: name)
                            == catalog.tree.feedBytes(Self.app, revision: 1, directory: old.directory, name: name), "\(name)")
                }
                #expect(new.products.entityTag == old.products.entityTag && new.catalog.entityTag == old.catalog.entityTag)
                #expect(new.products.gzip == old.products.gzip && new.catalog.gzip == old.catalog.gzip)
            }
            // Only the rich feed differed in revision 2 (reference names are not in products.json).
            let changedAt = buildMoment.adding(120)
            #expect(third.variants.allSatisfy { $0.catalog.lastModified == changedAt })
            #expect(zip(second.variants, third.variants).allSatisfy { $0.products.lastModified == $1.products.lastModified })
            #expect(
                catalog.published("v1/apps/\(Self.app)/catalog.json") == catalog.published("v1/apps/\(Self.app)/revisions/1/catalog.json"))

            // The sources are the truth again: nothing new to publish, and the same products.
            #expect(!FileManager.default.fileExists(atPath: catalog.catalogDirectory.appendingPathComponent("\(Self.app).xml").path))
            let again = try catalog.build(at: buildMoment.adding(180))
            #expect(again.plans.map(\.isUnchanged) == [true])
            #expect(try catalog.workflow.diff(app: Self.app, from: 1, to: 3, at: changedAt).diff.isEmpty)
            #expect(try catalog.workflow.history(app: Self.app).map(\.changed) == [1, 1, 0])
        }
    }

    /// The canonical file a rollback writes, exactly: every field, dates as dates, metadata
    /// numbers as integer or real, app settings beside the products.
    @Test func rollbackWritesCanonicalSources() throws {
        try withCatalog { catalog in
            try catalog.write("\(Self.app).xml", Self.definitions(price: "0.99"))
            try catalog.publish(at: buildMoment)
            try catalog.write("\(Self.app).xml", Self.definitions(price: "2.5"))
            try catalog.publish(at: buildMoment.adding(60))
            _ = try catalog.workflow.rollback(app: Self.app, to: 1, at: buildMoment.adding(120), author: nil, message: "undo price")
            let written = try String(contentsOf: catalog.catalogDirectory.appendingPathComponent("\(Self.app).plist"), encoding: .utf8)
            #expect(
                written == """
                    <?xml version="1.0" encoding="UTF-8"?>
                    <!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" "http://www.apple.com/DTDs/PropertyList-1.0.dtd">
                    <plist version="1.0">
                    <dict>
                    \t<key>app</key>
                    \t<string>com.example.game</string>
                    \t<key>platforms</key>
                    \t<array>
                    \t\t<string>iOS</string>
                    \t</array>
                    \t<key>products</key>
                    \t<array>
                    \t\t<dict>
                    \t\t\t<key>id</key>
                    \t\t\t<string>com.example.game.coins</string>
                    \t\t\t<key>type</key>
                    \t\t\t<string>consumable</string>
                    \t\t\t<key>referenceName</key>
                    \t\t\t<string>Coins</string>
                    \t\t\t<key>status</key>
                    \t\t\t<string>cleared</string>
                    \t\t\t<key>displayOrder</key>
                    \t\t\t<integer>2</integer>
                    \t\t\t<key>metadata</key>
                    \t\t\t<dict>
                    \t\t\t\t<key>price</key>
                    \t\t\t\t<real>0.99</real>
                    \t\t\t\t<key>tier</key>
                    \t\t\t\t<integer>1</integer>
                    \t\t\t\t<key>title</key>
                    \t\t\t\t<string>Gold</string>
                    \t\t\t</dict>
                    \t\t</dict>
                    \t\t<dict>
                    \t\t\t<key>id</key>
                    \t\t\t<string>com.example.game.pro</string>
                    \t\t\t<key>type</key>
                    \t\t\t<string>auto-renewable</string>
                    \t\t\t<key>status</key>
                    \t\t\t<string>cleared</string>
                    \t\t\t<key>availableFrom</key>
                    \t\t\t<date>2026-01-01T00:00:00Z</date>
                    \t\t\t<key>subscription</key>
                    \t\t\t<dict>
                    \t\t\t\t<key>group</key>
                    \t\t\t\t<string>premium</string>
                    \t\t\t\t<key>period</key>
                    \t\t\t\t<string>P1M</string>
                    \t\t\t\t<key>rank</key>
                    \t\t\t\t<integer>1</integer>
                    \t\t\t</dict>
                    \t\t</dict>
                    \t</array>
                    </dict>
                    </plist>

                    """)
            #expect(try catalog.tree.currentManifest(Self.app)?.message == "undo price")
        }
    }

    /// Identifiers published or retired after the restored revision stay, retired: App Store
    /// identifiers can never be reused. Sources in a folder become one canonical file.
    @Test func rollbackKeepsLaterIdentifiersRetired() throws {
        try withCatalog { catalog in
            try catalog.write("\(Self.app)/settings.plist", plist("<dict>\n\t<key>app</key>\n\t<string>\(Self.app)</string>\n</dict>"))
            try catalog.write("\(Self.app)/products.plist", productsPlist("<key>id</key>\n<string>com.example.game.a</string>"))
            try catalog.publish(at: buildMoment)
            try catalog.write(
                "\(Self.app)/products.plist",
                productsPlist(
                    "<key>id</key>\n<string>com.example.game.a</string>\n<key>status</key>\n<string>retired</string>",
                    "<key>id</key>\n<string>com.example.game.b</string>"))
            try catalog.publish(at: buildMoment.adding(60))

            let rollback = try catalog.workflow.rollback(app: Self.app, to: 1, at: buildMoment.adding(120), author: nil, message: nil)
            #expect(rollback.keptRetired == ["com.example.game.b", "com.example.game.a"])
            #expect(rollback.removed == ["catalog/\(Self.app)/products.plist", "catalog/\(Self.app)/settings.plist"])
            #expect(!FileManager.default.fileExists(atPath: catalog.catalogDirectory.appendingPathComponent(Self.app).path))
            #expect(text(catalog.published("v1/apps/\(Self.app)/products.json")) == "[]")
            #expect(catalog.diagnostics() == [])
            #expect(try catalog.build(at: buildMoment.adding(180)).plans.map(\.isUnchanged) == [true])
        }
    }

    /// A rollback that cannot publish (here a crash while staging) leaves the sources exactly
    /// as they were, and the current revision served.
    @Test func failedRollbackPutsTheSourcesBack() throws {
        try withCatalog { catalog in
            try catalog.write("\(Self.app).xml", Self.definitions(price: "0.99"))
            try catalog.publish(at: buildMoment)
            try catalog.write("\(Self.app).xml", Self.definitions(price: "1.99"))
            try catalog.publish(at: buildMoment.adding(60))
            let before = snapshot(of: catalog.catalogDirectory)
            struct Crash: Error {}
            #expect(throws: Crash.self) {
                try catalog.workflow.rollback(app: Self.app, to: 1, at: buildMoment.adding(120), author: nil, message: nil) { publisher in
                    publisher.beforeStep = { step in if step == "stage" { throw Crash() } }
                }
            }
            #expect(snapshot(of: catalog.catalogDirectory) == before)
            #expect(try catalog.tree.currentManifest(Self.app)?.revision == 2)
        }
    }

    /// A folder app with purchase settings and content items, its products in one file, a title
    /// changed in revision 2 (which neither the purchase record nor the content depend on).
    static func writeFolderAppWithContent(_ catalog: TemporaryCatalog, name: String) throws {
        try catalog.write(
            "\(Self.app)/settings.plist",
            plist(
                """
                <dict>
                	<key>app</key>
                	<string>\(Self.app)</string>
                	<key>appAppleId</key>
                	<integer>123456789</integer>
                	<key>environments</key>
                	<array><string>production</string></array>
                	<key>transferPolicy</key>
                	<string>transfer</string>
                	<key>webhookURL</key>
                	<string>https://example.com/hooks/entitlements</string>
                	<key>webhookSecretFile</key>
                	<string>secrets/webhook</string>
                </dict>
                """))
        try catalog.write(
            "\(Self.app)/products.plist",
            productsPlist(
                "<key>id</key>\n<string>com.example.game.level.forest</string>\n<key>type</key>\n<string>non-consumable</string>\n<key>metadata</key>\n<dict><key>title</key><string>\(name)</string></dict>"
            ))
        try catalog.write(
            "\(Self.app)/content.plist",
            plist(
                """
                <dict>
                	<key>content</key>
                	<array>
                		<dict>
                			<key>id</key>
                			<string>forest-levels</string>
                			<key>product</key>
                			<string>com.example.game.level.forest</string>
                			<key>folder</key>
                			<string>forest</string>
                			<key>files</key>
                			<array><string>level-1.json</string><string>maps/level-2.json</string></array>
                		</dict>
                	</array>
                </dict>
                """))
        try catalog.write("\(Self.app)/content/forest/level-1.json", "{\"level\":1}")
        try catalog.write("\(Self.app)/content/forest/maps/level-2.json", "{\"level\":2}")
    }

    /// A rollback restores products only: a folder app's purchase settings and content items stay
    /// as the sources say, written into the canonical file, and its content folder moves to the
    /// single-file app's place, so the new revision delivers the same content to the same apps.
    @Test func rollbackKeepsPurchaseSettingsAndContent() throws {
        try withCatalog { catalog in
            try Self.writeFolderAppWithContent(catalog, name: "Forest")
            try catalog.publish(at: buildMoment)
            try catalog.write(
                "\(Self.app)/products.plist",
                productsPlist(
                    "<key>id</key>\n<string>com.example.game.level.forest</string>\n<key>type</key>\n<string>non-consumable</string>\n<key>metadata</key>\n<dict><key>title</key><string>Woods</string></dict>"
                ))
            try catalog.publish(at: buildMoment.adding(60))

            let rollback = try catalog.workflow.rollback(app: Self.app, to: 1, at: buildMoment.adding(120), author: nil, message: nil)
            #expect(rollback.plan.revision == 3)
            #expect(
                rollback.removed == [
                    "catalog/\(Self.app)/content.plist", "catalog/\(Self.app)/products.plist", "catalog/\(Self.app)/settings.plist",
                ])
            let files = snapshot(of: catalog.catalogDirectory)
            #expect(files["\(Self.app).content/forest/level-1.json"] == Array("{\"level\":1}".utf8))
            #expect(files["\(Self.app).content/forest/maps/level-2.json"] == Array("{\"level\":2}".utf8))
            #expect(!FileManager.default.fileExists(atPath: catalog.catalogDirectory.appendingPathComponent(Self.app).path))
            #expect(try catalog.tree.contentManifest(Self.app, revision: 3) == catalog.tree.contentManifest(Self.app, revision: 2))
            #expect(try catalog.tree.contentManifest(Self.app, revision: 3)?.items.map(\.id) == ["forest-levels"])
            let record = try #require(catalog.tree.purchaseRecordBytes(Self.app, revision: 2))
            #expect(catalog.tree.purchaseRecordBytes(Self.app, revision: 3) == record)
            let settings = try #require(PurchaseRecord.decode(record))
            #expect(settings.appAppleId == 123_456_789 && settings.transferPolicy == .transfer && settings.environments == [.production])
            #expect(settings.webhookURL == "https://example.com/hooks/entitlements" && settings.webhookSecretFile == "secrets/webhook")
            #expect(catalog.diagnostics() == [])
            #expect(try catalog.build(at: buildMoment.adding(180)).plans.map(\.isUnchanged) == [true])
        }
    }

    /// A failed rollback of a folder app with content puts its files and content folder back.
    @Test func failedRollbackPutsTheContentFolderBack() throws {
        try withCatalog { catalog in
            try Self.writeFolderAppWithContent(catalog, name: "Forest")
            try catalog.publish(at: buildMoment)
            try catalog.write(
                "\(Self.app)/products.plist",
                productsPlist(
                    "<key>id</key>\n<string>com.example.game.level.forest</string>\n<key>type</key>\n<string>non-consumable</string>\n<key>metadata</key>\n<dict><key>title</key><string>Woods</string></dict>"
                ))
            try catalog.publish(at: buildMoment.adding(60))
            let before = snapshot(of: catalog.catalogDirectory)
            let folders = directories(under: catalog.catalogDirectory)
            struct Crash: Error {}
            #expect(throws: Crash.self) {
                try catalog.workflow.rollback(app: Self.app, to: 1, at: buildMoment.adding(120), author: nil, message: nil) { publisher in
                    publisher.beforeStep = { step in if step == "stage" { throw Crash() } }
                }
            }
            #expect(snapshot(of: catalog.catalogDirectory) == before)
            #expect(directories(under: catalog.catalogDirectory) == folders)
            #expect(try catalog.tree.currentManifest(Self.app)?.revision == 2)
        }
    }

    /// Purchase settings are not in a product snapshot: a rollback of a single-file app without
    /// content keeps them from the current sources, so the purchase record does not change.
    @Test func rollbackKeepsPurchaseSettings() throws {
        try withCatalog { catalog in
            func source(_ title: String) -> String {
                plist(
                    """
                    <dict>
                    	<key>appAppleId</key>
                    	<integer>42</integer>
                    	<key>transferPolicy</key>
                    	<string>transfer</string>
                    	<key>products</key>
                    	<array><dict><key>id</key><string>com.example.game.pro</string><key>type</key><string>non-consumable</string><key>metadata</key><dict><key>title</key><string>\(title)</string></dict></dict></array>
                    </dict>
                    """)
            }
            try catalog.write("\(Self.app).plist", source("Pro"))
            try catalog.publish(at: buildMoment)
            try catalog.write("\(Self.app).plist", source("Pro+"))
            try catalog.publish(at: buildMoment.adding(60))
            let record = try #require(catalog.tree.purchaseRecordBytes(Self.app, revision: 2))
            let rollback = try catalog.workflow.rollback(app: Self.app, to: 1, at: buildMoment.adding(120), author: nil, message: nil)
            #expect(rollback.plan.revision == 3)
            #expect(catalog.tree.purchaseRecordBytes(Self.app, revision: 3) == record)
            #expect(catalog.diagnostics() == [])
        }
    }
}
