import CatalogTestSupport
import Content
import Foundation
import Testing

@testable import CatalogKit

#if canImport(Glibc)
    import Glibc
#endif

/// The digests of unchanged content files are not computed again (`ContentDigestCache`), and a
/// changed file is never taken for unchanged.
@Suite struct ContentDigestCacheTests {
    /// A moment well after the file's times, so that the cache records it.
    static let later = Date().addingTimeInterval(60)
    /// The digest of the bytes ``withFile(_:_:)`` writes.
    static let one = ContentDigest.of(Data("one".utf8))

    /// A catalog whose folder holds `name` with the bytes "one"; `body` gets the file's URL and
    /// identity as the cache takes them.
    static func withFile(_ name: String = "a.txt", _ body: (TemporaryCatalog, URL, ContentDigestCache.Identity) throws -> Void) throws {
        try withCatalog { catalog in
            try catalog.write(name, "one")
            let url = catalog.catalogDirectory.appendingPathComponent(name)
            try body(catalog, url, try #require(ContentDigestCache.identity(of: url)))
        }
    }

    @Test func aFileRewrittenInPlaceWithTheSameSizeAndModificationTimeMisses() throws {
        try Self.withFile { _, url, before in
            var cache = ContentDigestCache()
            cache.record(Self.one, of: url.path, identity: before, now: Self.later)
            #expect(cache.digest(of: url.path, identity: before) == Self.one)

            // The attack on a cache of sizes and modification times: same size, the time put back.
            var status = stat()
            #expect(stat(url.path, &status) == 0)
            let times = [status.st_atim, status.st_mtim]
            var after = before
            // Until the clock the file system stamps with has ticked (a few milliseconds).
            for _ in 0..<300 where after.changed == before.changed {
                let handle = try FileHandle(forWritingTo: url)
                try handle.write(contentsOf: Data("two".utf8))
                try handle.close()
                // Put back to the nanosecond, as `touch -d` or a careless sync tool would.
                #expect(utimensat(AT_FDCWD, url.path, times, 0) == 0)
                after = try #require(ContentDigestCache.identity(of: url))
                if after.changed == before.changed { Thread.sleep(forTimeInterval: 0.01) }
            }
            // Everything a cache of size, inode and modification time would compare is the same…
            #expect(after.size == before.size)
            #expect(after.inode == before.inode)
            #expect(after.modified == before.modified)
            #expect(after.device == before.device)
            // …but the status-change time moved, and the cache misses.
            #expect(cache.digest(of: url.path, identity: after) == nil)
        }
    }

    @Test func aFileChangedJustBeforeItWasHashedIsNotRecorded() throws {
        try Self.withFile { _, url, identity in
            var cache = ContentDigestCache()
            cache.record(Self.one, of: url.path, identity: identity, now: Date())
            #expect(cache.digest(of: url.path, identity: identity) == nil)
            #expect(!cache.isChanged)
        }
    }

    @Test func theCacheReadsBackWhatItWrote() throws {
        try Self.withFile("a b.txt") { catalog, url, identity in
            var cache = ContentDigestCache()
            cache.record(Self.one, of: url.path, identity: identity, now: Self.later)
            let file = catalog.root.appendingPathComponent("cache/com.example.game.tsv")
            try cache.write(to: file)
            let read = ContentDigestCache.read(file)
            #expect(read.digest(of: url.path, identity: identity) == Self.one)
            #expect(ContentDigestCache.read(catalog.root.appendingPathComponent("none.tsv")).entries.isEmpty)
        }
    }

    /// A path that would break the cache's lines is not recorded. Recorded, one ending in "\r"
    /// made "\r\n" when written, which reading (by Characters) took for no line end, and the
    /// entry after it was lost.
    @Test func aPathThatWouldBreakItsLineIsNotRecorded() throws {
        try Self.withFile { catalog, url, identity in
            var cache = ContentDigestCache()
            for name in ["0\r", "1\r\n2", "3\n", "4\t"] {
                cache.record(
                    ContentDigest.of(Data()), of: catalog.catalogDirectory.appendingPathComponent(name).path, identity: identity,
                    now: Self.later)
            }
            cache.record(Self.one, of: url.path, identity: identity, now: Self.later)
            #expect(cache.entries.count == 1)
            let file = catalog.root.appendingPathComponent("cache/com.example.game.tsv")
            try cache.write(to: file)
            #expect(ContentDigestCache.read(file).digest(of: url.path, identity: identity) == Self.one)
        }
    }

    /// Planning takes a cached digest without reading the file; but a blob is stored only after
    /// its bytes hash to the planned digest, so even a wrong cache never stores wrong bytes.
    @Test func planningUsesTheCacheAndPublishingStillChecksTheBytes() throws {
        try withCatalog { catalog in
            try ContentPublishingTests.write(catalog)
            let validation = catalog.workflow.validate()
            let items = try #require(validation.catalogs.first).content
            let file = try #require(items.first { $0.id == "levels" }?.files.first)
            let identity = try #require(ContentDigestCache.identity(of: file.source))
            var cache = ContentDigestCache()
            let wrong = ContentDigest.of(Data("not these bytes".utf8))
            cache.record(wrong, of: file.source.path, identity: identity, now: Self.later)
            let planned = try #require(try ContentPublishing.plan(items, following: nil, cache: cache))
            #expect(planned.manifest.digests.contains(wrong), "taken from the cache, not read")

            var cacheFile = ContentDigestCache()
            cacheFile.record(wrong, of: file.source.path, identity: identity, now: Self.later)
            try cacheFile.write(to: ContentDigestCache.url(in: catalog.tree, app: ContentPublishingTests.app))
            #expect(throws: CatalogError.self) { try catalog.build(at: buildMoment) }
            #expect(!BlobStore(root: catalog.tree.content).contains(wrong))
            #expect(try catalog.tree.currentManifest(ContentPublishingTests.app) == nil)
            // The failure dropped the cache: the next build reads the files and publishes.
            #expect(try catalog.publish(at: buildMoment).map(\.revision) == [1])
            #expect(try catalog.tree.contentManifest(ContentPublishingTests.app, revision: 1)?.digests.contains(wrong) == false)
        }
    }
}
