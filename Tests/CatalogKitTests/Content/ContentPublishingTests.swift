import CatalogTestSupport
import Content
import Foundation
import Testing
import Time

@testable import CatalogKit

/// `catalog build` and content (docs/content.md, "Publishing"): blobs in the store beside the
/// records, deduplicated and durable; the revision's `content.json` in its records; versions;
/// a content change alone is a revision; feeds never change for content; unnamed blobs pruned.
@Suite struct ContentPublishingTests {
    static let app = "com.example.game"

    /// The rules suite's app: a pack (product) and two dated issues of `game.pass`.
    static let source = ContentRulesTests.app(
        ContentRulesTests.item("levels", product: "com.example.game.pack", folder: "levels", files: ["1.json", "2.json"]),
        ContentRulesTests.item("issue-1", group: "game.pass", published: "2026-01-01T00:00:00Z", files: ["issues/1.txt"]),
        ContentRulesTests.item("issue-2", group: "game.pass", published: "2026-02-01T00:00:00Z", files: ["issues/2.txt"]))

    /// The same products, and an empty `content` array.
    static let noContent = ContentRulesTests.app()

    static func write(_ catalog: TemporaryCatalog, level2: String = "[2]") throws {
        try catalog.write("\(app).plist", source)
        try catalog.write("\(app).content/levels/1.json", "{\"level\":1}")
        try catalog.write("\(app).content/levels/2.json", level2)
        try catalog.write("\(app).content/issues/1.txt", "January")
        // The same bytes as issue 1's: one blob for both.
        try catalog.write("\(app).content/issues/2.txt", "January")
    }

    static func digest(_ text: String) -> ContentDigest { ContentDigest.of(Data(text.utf8)) }

    @Test func buildPutsBlobsAndWritesTheManifestInTheRecords() throws {
        try withCatalog { catalog in
            try Self.write(catalog)
            let plans = try catalog.publish(at: buildMoment)
            #expect(plans.map(\.revision) == [1])
            let store = BlobStore(root: catalog.tree.content)
            #expect(catalog.tree.content.lastPathComponent == "public.content")
            #expect(
                Set(try store.list()) == [Self.digest("{\"level\":1}"), Self.digest("[2]"), Self.digest("January")],
                "deduplicated: three blobs")
            let manifest = try #require(try catalog.tree.contentManifest(Self.app, revision: 1))
            #expect(manifest.items.map(\.id) == ["issue-1", "issue-2", "levels"])
            #expect(manifest.items.map(\.version) == [1, 1, 1])
            #expect(
                manifest.items[2].files == [
                    ContentManifest.File(path: "1.json", size: 11, sha256: Self.digest("{\"level\":1}")),
                    ContentManifest.File(path: "2.json", size: 3, sha256: Self.digest("[2]")),
                ])
            #expect(
                manifest.items[0].availability == .subscriptionGroup("game.pass", published: Date(timeIntervalSince1970: 1_767_225_600)))
            // The bytes on disk are the byte-stable encoding, and nothing of content is under public/.
            #expect(FileManager.default.contents(atPath: catalog.tree.contentManifestURL(Self.app, 1).path) == manifest.encoded())
            #expect(catalog.publicSnapshot().keys.filter { $0.contains("content") } == [])
            for digest in try store.list() { #expect(try store.verify(digest)) }
        }
    }

    /// Content lives outside `public/`: the same catalog with and without content publishes the
    /// same public bytes, every file.
    @Test func contentChangesNoPublicByte() throws {
        let without = try withCatalog { catalog in
            try catalog.write("\(Self.app).plist", Self.noContent)
            try catalog.publish(at: buildMoment)
            #expect(try catalog.tree.contentManifest(Self.app, revision: 1) == nil, "no content: no content.json")
            return catalog.publicSnapshot()
        }
        let with = try withCatalog { catalog in
            try Self.write(catalog)
            try catalog.publish(at: buildMoment)
            return catalog.publicSnapshot()
        }
        #expect(without.count > 5)
        #expect(without == with)
    }

    @Test func nothingChangedNothingWritten() throws {
        try withCatalog { catalog in
            try Self.write(catalog)
            try catalog.publish(at: buildMoment)
            let store = BlobStore(root: catalog.tree.content)
            let blob = store.url(of: Self.digest("January"))
            let before = try FileManager.default.attributesOfItem(atPath: blob.path)[.modificationDate] as? Date
            let records = snapshot(of: catalog.tree.records)
            let plans = try catalog.publish(at: buildMoment.adding(60))
            #expect(plans.map(\.isUnchanged) == [true])
            #expect(plans.map(\.revision) == [1])
            #expect(snapshot(of: catalog.tree.records) == records)
            #expect(try FileManager.default.attributesOfItem(atPath: blob.path)[.modificationDate] as? Date == before)

            // A blob lost from the store is put back by the next build, still unchanged.
            try FileManager.default.removeItem(at: blob)
            #expect(try catalog.publish(at: buildMoment.adding(120)).map(\.isUnchanged) == [true])
            #expect(try store.verify(Self.digest("January")))
        }
    }

    /// A changed file alone makes a new revision: its item's version goes up, the others keep
    /// theirs, the old blob stays (revision 1 names it), and every feed keeps its bytes and validators.
    @Test func aContentChangeAloneIsANewRevision() throws {
        try withCatalog { catalog in
            try Self.write(catalog)
            try catalog.publish(at: buildMoment)
            try Self.write(catalog, level2: "[2,2]")
            let plans = try catalog.publish(at: buildMoment.adding(60))
            #expect(plans.map(\.revision) == [2])
            #expect(plans.map(\.changedFeedCount) == [0])
            #expect(plans.first?.contentChange?.changed == ["levels"])
            #expect(plans.first?.contentChange?.items == 3)
            let manifest = try #require(try catalog.tree.contentManifest(Self.app, revision: 2))
            #expect(manifest.items.map(\.version) == [1, 1, 2])
            let first = try catalog.tree.manifest(Self.app, revision: 1)
            let second = try #require(try catalog.tree.currentManifest(Self.app))
            #expect(second.revision == 2)
            #expect(second.variants == first.variants, "same feeds, same ETags and Last-Modified")
            #expect(Set(try BlobStore(root: catalog.tree.content).list()).isSuperset(of: [Self.digest("[2]"), Self.digest("[2,2]")]))
            // Removing every item is a change too: the next revision has no content.json.
            try catalog.write("\(Self.app).plist", Self.noContent)
            let removal = try catalog.publish(at: buildMoment.adding(120))
            #expect(removal.map(\.revision) == [3])
            #expect(removal.first?.contentChange?.removed == ["issue-1", "issue-2", "levels"])
            #expect(removal.first?.contentChange?.items == 0)
            #expect(try catalog.tree.contentManifest(Self.app, revision: 3) == nil)
            #expect(try catalog.build(at: buildMoment.adding(180), dryRun: true).plans.first?.contentChange == nil)
        }
    }

    /// The attack: a file swapped between planning (hashing) and publishing would be served under
    /// a digest that is not its own. The store checks the planned digest and nothing is published.
    @Test func aFileChangedAfterPlanningIsNotPublished() throws {
        try withCatalog { catalog in
            try Self.write(catalog)
            let swap = catalog.catalogDirectory.appendingPathComponent("\(Self.app).content/levels/2.json")
            let result = Result {
                try catalog.build(at: buildMoment) { publisher in
                    publisher.beforeStep = { step in
                        if step == "stage" { try Data("[666]".utf8).write(to: swap) }
                    }
                }
            }
            #expect(throws: CatalogError.self) { try result.get() }
            #expect(try catalog.tree.currentManifest(Self.app) == nil)
            #expect(!BlobStore(root: catalog.tree.content).contains(Self.digest("[666]")))
        }
    }

    /// Blobs no revision names (a build that failed before its revision) are pruned by the next
    /// build; blobs only an older revision names stay, since every revision is kept.
    @Test func blobsAFailedBuildLeftArePrunedByTheNext() throws {
        try withCatalog { catalog in
            let (store, mark) = try Self.publishRevisionOne(catalog)
            #expect(FileManager.default.fileExists(atPath: mark.path), "a store its builds filled holds only named blobs")
            try Self.write(catalog, level2: "[3]")
            let failed = Result {
                try catalog.build(at: buildMoment.adding(60)) { publisher in
                    publisher.beforeStep = { step in
                        if step == "staged manifest" { throw CatalogError.io(path: "test", message: "the disk is gone") }
                    }
                }
            }
            #expect(throws: CatalogError.self) { try failed.get() }
            #expect(store.contains(Self.digest("[3]")), "put before the revision that names it, which never came")
            #expect(!FileManager.default.fileExists(atPath: mark.path))
            try Self.write(catalog, level2: "[4]")
            let build = try catalog.build(at: buildMoment.adding(120))
            #expect(build.prunedBlobs == [Self.digest("[3]")])
            #expect(!store.contains(Self.digest("[3]")))
            #expect(store.contains(Self.digest("[2]")), "revision 1 still names it")
            #expect(store.contains(Self.digest("[4]")))
            #expect(FileManager.default.fileExists(atPath: mark.path))
        }
    }

    /// A store without the swept mark (filled before builds kept it, or whose pruning failed) is
    /// pruned by reading every manifest, once; after that, builds trust the mark and read none:
    /// a file put into the store by hand is not theirs to remove.
    @Test func aStoreWithoutTheSweptMarkIsPrunedOnce() throws {
        try withCatalog { catalog in
            let (store, mark) = try Self.publishRevisionOne(catalog)
            try FileManager.default.removeItem(at: mark)
            let orphan = try store.put(Data("left by a failed build".utf8)).digest
            try Self.write(catalog, level2: "[3]")
            #expect(try catalog.build(at: buildMoment.adding(60)).prunedBlobs == [orphan])
            #expect(!store.contains(orphan))
            #expect(FileManager.default.fileExists(atPath: mark.path))

            let byHand = try store.put(Data("put by hand".utf8)).digest
            try Self.write(catalog, level2: "[4]")
            #expect(try catalog.build(at: buildMoment.adding(120)).prunedBlobs.isEmpty)
            #expect(store.contains(byHand))
            #expect(FileManager.default.fileExists(atPath: mark.path))
        }
    }

    /// Revision 1 published: the content store it filled, and the store's swept mark.
    static func publishRevisionOne(_ catalog: TemporaryCatalog) throws -> (store: BlobStore, sweptMark: URL) {
        try write(catalog)
        try catalog.publish(at: buildMoment)
        return (BlobStore(root: catalog.tree.content), ContentPublishing.sweptMark(in: catalog.tree))
    }

    /// Revision 1, then a build of changed content run with `probe`.
    static func crashRun(_ catalog: TemporaryCatalog, probe: PublishingTests.StepProbe) throws -> Result<CatalogWorkflow.Build, any Error> {
        try write(catalog)
        try catalog.publish(at: buildMoment)
        try write(catalog, level2: "[2,2]")
        try catalog.write("\(app).content/levels/3.json", "[3]")
        try catalog.write(
            "\(app).plist",
            source.replacingOccurrences(of: "<string>2.json</string>", with: "<string>2.json</string>\n\t\t\t\t<string>3.json</string>"))
        return Result { try catalog.build(at: buildMoment.adding(60)) { $0.beforeStep = probe.step } }
    }

    /// A crash at any step of a content build, blobs included, leaves a current revision whose
    /// content.json names only blobs that are stored; the next build completes the new revision.
    @Test func aCrashAtAnyStepLeavesEveryNamedBlobStored() throws {
        let steps = try withCatalog { catalog in
            let probe = PublishingTests.StepProbe(failAt: nil, currentManifest: catalog.tree.currentManifestURL(Self.app))
            _ = try Self.crashRun(catalog, probe: probe).get()
            #expect(try catalog.tree.contentManifest(Self.app, revision: 2)?.items.map(\.version) == [1, 1, 2])
            return probe.steps
        }
        #expect(steps.filter { $0.hasPrefix("content ") }.count == 2, "two new blobs: [2,2] and [3]")
        for failAt in 1...steps.count {
            try withCatalog { catalog in
                let probe = PublishingTests.StepProbe(failAt: failAt, currentManifest: catalog.tree.currentManifestURL(Self.app))
                #expect(throws: PublishingTests.StepProbe.Crash.self, "crash at step \(failAt)") {
                    try Self.crashRun(catalog, probe: probe).get()
                }
                let current = try #require(try catalog.tree.currentManifest(Self.app))
                let content = try #require(try catalog.tree.contentManifest(Self.app, revision: current.revision))
                let store = BlobStore(root: catalog.tree.content)
                for digest in content.digests { #expect(store.contains(digest), "step \(failAt) (\(steps[failAt - 1])): \(digest)") }
                try catalog.publish(at: buildMoment.adding(120))
                let final = try #require(try catalog.tree.currentManifest(Self.app)).revision
                #expect(try catalog.tree.contentManifest(Self.app, revision: final)?.items.map(\.version) == [1, 1, 2], "step \(failAt)")
                for digest in try #require(try catalog.tree.contentManifest(Self.app, revision: final)).digests {
                    #expect(try store.verify(digest), "step \(failAt)")
                }
            }
        }
    }
}
