import Content
import Foundation
import Testing

/// The answer to "what may I download": grants, the manifest and the key ring together
/// (docs/content.md, "What a customer is answered").
@Suite struct ContentDownloadTests {
    static let now = Date(timeIntervalSince1970: 1_750_000_123)
    static let issue = ContentDigest.of(Data("issue".utf8))
    static let cover = ContentDigest.of(Data("cover".utf8))
    static let levels = ContentDigest.of(Data("levels".utf8))

    static func manifest() throws -> ContentManifest {
        try ContentManifest(items: [
            .init(
                id: "mar-2025", version: 2, subscriptionGroup: "magazine", published: Date(timeIntervalSince1970: 1_740_787_200),
                files: [.init(path: "issue.pdf", size: 5, sha256: issue), .init(path: "cover.jpg", size: 5, sha256: cover)]),
            .init(id: "levels", product: "levels.pack", files: [.init(path: "levels.pack", size: 6, sha256: levels)]),
            .init(id: "other", product: "other.pack", files: [.init(path: "other.pack", size: 6, sha256: levels)]),
        ])
    }

    static func ring() throws -> ContentKeyRing {
        try ContentKeyRing(keys: [ContentSigningKey(id: "k1", secret: [UInt8](repeating: 1, count: 32))], current: "k1")
    }

    @Test func grantedItemsOnlyEachFileWithAURLThatVerifies() throws {
        let ring = try Self.ring()
        let grants = [
            ContentGrant(itemId: "mar-2025", reason: .publishedDuringPeriod(transactionId: "t2")),
            ContentGrant(itemId: "levels", reason: .holdsProduct(productId: "levels.pack", transactionId: "t1")),
            ContentGrant(itemId: "gone-from-the-catalog", reason: .holdsProduct(productId: "x", transactionId: "t3")),
        ]
        let downloads = ContentDownload.list(grants: grants, manifest: try Self.manifest(), keyRing: ring, now: Self.now, lifetime: 600)
        #expect(downloads.map(\.item) == ["levels", "mar-2025"])
        #expect(downloads.map(\.version) == [1, 2])
        #expect(downloads[1].files.map(\.path) == ["cover.jpg", "issue.pdf"])
        #expect(downloads[1].files.map(\.sha256) == [Self.cover, Self.issue])
        for file in downloads.flatMap(\.files) {
            // 600 s from now, rounded up to the next five minutes.
            #expect(file.expires == 1_750_000_800)
            let parts = file.url.split(separator: "?", maxSplits: 1)
            #expect(parts.count == 2)
            let token = try ring.verify(path: parts[0], query: parts[1], now: Self.now).get()
            #expect(token.digest == file.sha256)
        }
    }

    @Test func urlsIssuedInOneWindowAreTheSameURL() throws {
        let ring = try Self.ring()
        let grants = [ContentGrant(itemId: "levels", reason: .holdsProduct(productId: "levels.pack", transactionId: "t1"))]
        let first = ContentDownload.list(grants: grants, manifest: try Self.manifest(), keyRing: ring, now: Self.now, lifetime: 600)
        let later = ContentDownload.list(
            grants: grants, manifest: try Self.manifest(), keyRing: ring, now: Self.now.addingTimeInterval(60), lifetime: 600)
        #expect(first == later)
    }

    @Test func aLifetimeBeyondTheRingsMaximumIsCutToIt() throws {
        let ring = try Self.ring()
        let grants = [ContentGrant(itemId: "levels", reason: .holdsProduct(productId: "levels.pack", transactionId: "t1"))]
        let downloads = ContentDownload.list(
            grants: grants, manifest: try Self.manifest(), keyRing: ring, now: Self.now, lifetime: 30 * 86_400)
        let file = try #require(downloads.first?.files.first)
        #expect(Double(file.expires) - Self.now.timeIntervalSince1970 <= ring.maximumLifetime)
        let parts = file.url.split(separator: "?", maxSplits: 1)
        #expect(throws: Never.self) { try ring.verify(path: parts[0], query: parts[1], now: Self.now).get() }
    }
}
