import CatalogClient
import CatalogKit
import Foundation
import XCTest

/// `CatalogClient` fetching from the real `catalog serve` on loopback; the server's `/metrics`
/// confirm what went over the wire.
final class FetchTests: XCTestCase {
    static let ids = ["com.example.client.coins", "com.example.client.gems"]

    func testFirstFetchDownloadsAndKeepsTheValidators() async throws {
        let fixture = try ServedCatalog(ids: Self.ids)
        defer { fixture.remove() }
        let manifest = try XCTUnwrap(try fixture.publicTree.currentManifest(ServedCatalog.app))
        try await fixture.serve { server, counters in
            let list = await fixture.client(server: server).products(platform: .iOS, appVersion: "2.3.1")
            XCTAssertEqual(list.identifiers, Self.ids)
            XCTAssertEqual(list.source, .network)
            XCTAssertEqual(list.status, 200)
            XCTAssertFalse(list.isFromCache)
            XCTAssertFalse(list.isStale)
            XCTAssertNil(list.error)
            let published = manifest.variants.map(\.products)
            XCTAssertTrue(published.contains { $0.entityTag == list.entityTag || $0.gzip.entityTag == list.entityTag }, "\(list)")
            XCTAssertNotNil(list.lastModified)
            let freshUntil = try XCTUnwrap(list.freshUntil)
            XCTAssertGreaterThan(freshUntil, Date().addingTimeInterval(200), "max-age=300 makes it fresh for about five minutes")
            let served = try await counters.requests("products", 200)
            XCTAssertEqual(served, 1)
        }
    }

    /// A relaunched app (a new client on the same directory) revalidates with the validators it
    /// kept on disk, and the server answers 304 without a body.
    func testStaleCacheIsRevalidatedWithA304() async throws {
        let fixture = try ServedCatalog(ids: Self.ids)
        defer { fixture.remove() }
        try await fixture.serve(cacheControl: "public, max-age=0") { server, counters in
            let first = await fixture.client(server: server).products(platform: .iOS, appVersion: "2.3.1")
            XCTAssertEqual(first.source, .network)
            let second = await fixture.client(server: server).products(platform: .iOS, appVersion: "2.3.1")
            XCTAssertEqual(second.source, .notModified)
            XCTAssertEqual(second.status, 304)
            XCTAssertEqual(second.identifiers, Self.ids)
            XCTAssertEqual(second.entityTag, first.entityTag)
            XCTAssertEqual(second.lastModified, first.lastModified)
            XCTAssertTrue(second.isFromCache)
            XCTAssertFalse(second.isStale)
            let notModified = try await counters.requests("products", 304)
            let full = try await counters.requests("products", 200)
            XCTAssertEqual(notModified, 1, "the server served the revalidation as a 304")
            XCTAssertEqual(full, 1)
        }
    }

    /// While `max-age` runs, a relaunched app gets the list from disk with no request at all.
    func testFreshCacheAnswersWithoutARequest() async throws {
        let fixture = try ServedCatalog(ids: Self.ids)
        defer { fixture.remove() }
        try await fixture.serve(cacheControl: "public, max-age=300") { server, counters in
            _ = await fixture.client(server: server).products(platform: .iOS, appVersion: "2.3.1")
            let client = fixture.client(server: server)
            let list = await client.products(platform: .iOS, appVersion: "2.3.1")
            let again = await client.products(platform: .iOS, appVersion: "2.3.1")
            for answer in [list, again] {
                XCTAssertEqual(answer.source, .freshCache)
                XCTAssertNil(answer.status, "no request, so no status")
                XCTAssertEqual(answer.identifiers, Self.ids)
            }
            let requests = try await counters.allRequests()
            XCTAssertEqual(requests, 1, "only the first launch asked the server")
        }
    }

    func testRefreshRevalidatesAFreshCache() async throws {
        let fixture = try ServedCatalog(ids: Self.ids)
        defer { fixture.remove() }
        try await fixture.serve(cacheControl: "public, max-age=300") { server, counters in
            let client = fixture.client(server: server)
            _ = await client.products(platform: .iOS, appVersion: "2.3.1")
            let refreshed = await client.refresh(platform: .iOS, appVersion: "2.3.1")
            XCTAssertEqual(refreshed.source, .notModified)
            XCTAssertEqual(refreshed.status, 304)
            XCTAssertEqual(refreshed.identifiers, Self.ids)
            let notModified = try await counters.requests("products", 304)
            XCTAssertEqual(notModified, 1)
            // The 304 starts a new max-age: the next call needs no request.
            let after = await client.products(platform: .iOS, appVersion: "2.3.1")
            XCTAssertEqual(after.source, .freshCache)
        }
    }

    /// A revision published while the server runs reaches the client on its next revalidation,
    /// with the rich feed's details and revision.
    func testNewRevisionIsPickedUp() async throws {
        let fixture = try ServedCatalog(ids: Self.ids)
        defer { fixture.remove() }
        try await fixture.serve(cacheControl: "public, max-age=0") { server, counters in
            let client = fixture.client(server: server) { $0.feed = .catalog }
            let first = await client.products(platform: .iOS, appVersion: "2.3.1")
            XCTAssertEqual(first.revision, 1)
            XCTAssertEqual(first.products?.map(\.type), ["consumable", "consumable"])
            try fixture.publish(Self.ids + ["com.example.client.bundle"])
            // The server reloads within a second; ask until it serves the new revision.
            var latest = first
            for _ in 0..<50 where latest.revision == 1 {
                try await Task.sleep(nanoseconds: 100_000_000)
                latest = await client.products(platform: .iOS, appVersion: "2.3.1")
            }
            XCTAssertEqual(latest.source, .network)
            XCTAssertEqual(latest.status, 200)
            XCTAssertEqual(latest.revision, 2)
            XCTAssertEqual(latest.identifiers, Self.ids + ["com.example.client.bundle"])
            XCTAssertNotEqual(latest.entityTag, first.entityTag)
            let changed = try await counters.requests("catalog", 200)
            XCTAssertEqual(changed, 2, "one download per revision; every other answer was a 304")
        }
    }

    /// With the server gone, the cached list comes back, marked stale, with the reason.
    func testServerDownReturnsTheCacheMarkedStale() async throws {
        let fixture = try ServedCatalog(ids: Self.ids)
        defer { fixture.remove() }
        let box = URLBox()
        try await fixture.serve(cacheControl: "public, max-age=0") { server, _ in
            box.url = server
            _ = await fixture.client(server: server).products(platform: .iOS, appVersion: "2.3.1")
        }
        let list = await fixture.client(server: try XCTUnwrap(box.url)).products(platform: .iOS, appVersion: "2.3.1")
        XCTAssertEqual(list.source, .staleCache)
        XCTAssertTrue(list.isStale)
        XCTAssertTrue(list.isFromCache)
        XCTAssertEqual(list.identifiers, Self.ids)
        XCTAssertEqual(list.error?.code, .transport)
        XCTAssertNil(list.status)
        XCTAssertNotNil(list.entityTag, "the cached validators are still reported")
    }

    func testServerDownWithoutACacheReturnsTheFallbackList() async throws {
        let fixture = try ServedCatalog(ids: Self.ids)
        defer { fixture.remove() }
        let list = await fixture.client(server: try await closedServerURL(), fallback: ["com.example.client.bundled"])
            .products(platform: .iOS, appVersion: "2.3.1")
        XCTAssertEqual(list.source, .fallback)
        XCTAssertEqual(list.identifiers, ["com.example.client.bundled"])
        XCTAssertEqual(list.error?.code, .transport)
        XCTAssertTrue(list.isStale)
    }

    /// A 4xx is not retried (the server counted one request) and does not empty the list.
    func testUnknownAppFallsBackWithoutRetrying() async throws {
        let fixture = try ServedCatalog(ids: Self.ids)
        defer { fixture.remove() }
        try await fixture.serve { server, counters in
            let client = fixture.client(server: server) {
                $0.app = "com.example.unknown"
                $0.fetchAttempts = 3
            }
            let list = await client.products(platform: .iOS, appVersion: "2.3.1")
            XCTAssertEqual(list.source, .fallback)
            XCTAssertEqual(list.status, 404)
            XCTAssertEqual(list.error?.code, .rejected)
            XCTAssertEqual(list.error?.message, "HTTP 404: no published app 'com.example.unknown'")
            let notFound = try await counters.requests("products", 404)
            XCTAssertEqual(notFound, 1)
        }
    }

    /// A 200 that is not a feed (a captive portal's page) never replaces the cached list.
    func testABodyThatIsNotAFeedKeepsTheCachedList() async throws {
        let fixture = try ServedCatalog(ids: Self.ids)
        defer { fixture.remove() }
        try await fixture.serve { server, _ in
            let client = fixture.client(server: server)
            let portal = try XCTUnwrap(URL(string: "/readyz", relativeTo: server)?.absoluteURL)
            let list = await client.products(from: portal, revalidate: false)
            XCTAssertEqual(list.source, .fallback)
            XCTAssertEqual(list.error?.code, .malformedResponse)
            XCTAssertEqual(list.identifiers, ["com.example.client.bundled"])
        }
    }

    /// Calls made together share one request: the server answered a single feed request.
    func testConcurrentCallsShareOneRequest() async throws {
        let fixture = try ServedCatalog(ids: Self.ids)
        defer { fixture.remove() }
        try await fixture.serve(cacheControl: "public, max-age=300") { server, counters in
            let client = fixture.client(server: server)
            let lists = await withTaskGroup(of: ProductList.self) { group in
                for _ in 0..<20 { group.addTask { await client.products(platform: .iOS, appVersion: "2.3.1") } }
                return await group.reduce(into: []) { $0.append($1) }
            }
            XCTAssertEqual(lists.count, 20)
            XCTAssertTrue(lists.allSatisfy { $0.identifiers == Self.ids })
            XCTAssertTrue(lists.allSatisfy { $0.source == .network || $0.source == .freshCache }, "\(lists.map(\.source))")
            let requests = try await counters.allRequests()
            XCTAssertEqual(requests, 1)
        }
    }
}
