import CatalogClient
import CatalogKit
import Foundation
import Testing

/// `CatalogClient` fetching from the real `catalog serve` on loopback; the server's `/metrics`
/// confirm what went over the wire.
@Suite struct FetchTests {
    static let ids = ["com.example.client.coins", "com.example.client.gems"]

    @Test func firstFetchDownloadsAndKeepsTheValidators() async throws {
        let fixture = try ServedCatalog(ids: Self.ids)
        defer { fixture.remove() }
        let manifest = try #require(try fixture.publicTree.currentManifest(ServedCatalog.app))
        try await fixture.serve { server, counters in
            let list = await fixture.client(server: server).products(platform: .iOS, appVersion: "2.3.1")
            #expect(list.identifiers == Self.ids)
            #expect(list.source == .network)
            #expect(list.status == 200)
            #expect(!list.isFromCache)
            #expect(!list.isStale)
            #expect(list.error == nil)
            let published = manifest.variants.map(\.products)
            #expect(published.contains { $0.entityTag == list.entityTag || $0.gzip.entityTag == list.entityTag }, "\(list)")
            #expect(list.lastModified != nil)
            let freshUntil = try #require(list.freshUntil)
            #expect(freshUntil > Date().addingTimeInterval(200), "max-age=300 makes it fresh for about five minutes")
            let served = try await counters.requests("products", 200)
            #expect(served == 1)
        }
    }

    /// A relaunched app (a new client on the same directory) revalidates with the validators it
    /// kept on disk, and the server answers 304 without a body.
    @Test func staleCacheIsRevalidatedWithA304() async throws {
        let fixture = try ServedCatalog(ids: Self.ids)
        defer { fixture.remove() }
        try await fixture.serve(cacheControl: "public, max-age=0") { server, counters in
            let first = await fixture.client(server: server).products(platform: .iOS, appVersion: "2.3.1")
            #expect(first.source == .network)
            let second = await fixture.client(server: server).products(platform: .iOS, appVersion: "2.3.1")
            #expect(second.source == .notModified)
            #expect(second.status == 304)
            #expect(second.identifiers == Self.ids)
            #expect(second.entityTag == first.entityTag)
            #expect(second.lastModified == first.lastModified)
            #expect(second.isFromCache)
            #expect(!second.isStale)
            let notModified = try await counters.requests("products", 304)
            let full = try await counters.requests("products", 200)
            #expect(notModified == 1, "the server served the revalidation as a 304")
            #expect(full == 1)
        }
    }

    /// While `max-age` runs, a relaunched app gets the list from disk with no request at all.
    @Test func freshCacheAnswersWithoutARequest() async throws {
        let fixture = try ServedCatalog(ids: Self.ids)
        defer { fixture.remove() }
        try await fixture.serve(cacheControl: "public, max-age=300") { server, counters in
            _ = await fixture.client(server: server).products(platform: .iOS, appVersion: "2.3.1")
            let client = fixture.client(server: server)
            let list = await client.products(platform: .iOS, appVersion: "2.3.1")
            let again = await client.products(platform: .iOS, appVersion: "2.3.1")
            for answer in [list, again] {
                #expect(answer.source == .freshCache)
                #expect(answer.status == nil, "no request, so no status")
                #expect(answer.identifiers == Self.ids)
            }
            let requests = try await counters.allRequests()
            #expect(requests == 1, "only the first launch asked the server")
        }
    }

    @Test func refreshRevalidatesAFreshCache() async throws {
        let fixture = try ServedCatalog(ids: Self.ids)
        defer { fixture.remove() }
        try await fixture.serve(cacheControl: "public, max-age=300") { server, counters in
            let client = fixture.client(server: server)
            _ = await client.products(platform: .iOS, appVersion: "2.3.1")
            let refreshed = await client.refresh(platform: .iOS, appVersion: "2.3.1")
            #expect(refreshed.source == .notModified)
            #expect(refreshed.status == 304)
            #expect(refreshed.identifiers == Self.ids)
            let notModified = try await counters.requests("products", 304)
            #expect(notModified == 1)
            // The 304 starts a new max-age: the next call needs no request.
            let after = await client.products(platform: .iOS, appVersion: "2.3.1")
            #expect(after.source == .freshCache)
        }
    }

    /// A revision published while the server runs reaches the client on its next revalidation,
    /// with the rich feed's details and revision.
    @Test func newRevisionIsPickedUp() async throws {
        let fixture = try ServedCatalog(ids: Self.ids)
        defer { fixture.remove() }
        try await fixture.serve(cacheControl: "public, max-age=0") { server, counters in
            let client = fixture.client(server: server) { $0.feed = .catalog }
            let first = await client.products(platform: .iOS, appVersion: "2.3.1")
            #expect(first.revision == 1)
            #expect(first.products?.map(\.type) == ["consumable", "consumable"])
            try fixture.publish(Self.ids + ["com.example.client.bundle"])
            // The server reloads within a second; ask until it serves the new revision.
            var latest = first
            for _ in 0..<50 where latest.revision == 1 {
                try await Task.sleep(nanoseconds: 100_000_000)
                latest = await client.products(platform: .iOS, appVersion: "2.3.1")
            }
            #expect(latest.source == .network)
            #expect(latest.status == 200)
            #expect(latest.revision == 2)
            #expect(latest.identifiers == Self.ids + ["com.example.client.bundle"])
            #expect(latest.entityTag != first.entityTag)
            let changed = try await counters.requests("catalog", 200)
            #expect(changed == 2, "one download per revision; every other answer was a 304")
        }
    }

    /// With the server gone, the cached list comes back, marked stale, with the reason.
    @Test func serverDownReturnsTheCacheMarkedStale() async throws {
        let fixture = try ServedCatalog(ids: Self.ids)
        defer { fixture.remove() }
        let box = URLBox()
        try await fixture.serve(cacheControl: "public, max-age=0") { server, _ in
            box.url = server
            _ = await fixture.client(server: server).products(platform: .iOS, appVersion: "2.3.1")
        }
        let list = await fixture.client(server: try #require(box.url)).products(platform: .iOS, appVersion: "2.3.1")
        #expect(list.source == .staleCache)
        #expect(list.isStale)
        #expect(list.isFromCache)
        #expect(list.identifiers == Self.ids)
        #expect(list.error?.code == .transport)
        #expect(list.status == nil)
        #expect(list.entityTag != nil, "the cached validators are still reported")
    }

    @Test func serverDownWithoutACacheReturnsTheFallbackList() async throws {
        let fixture = try ServedCatalog(ids: Self.ids)
        defer { fixture.remove() }
        let list = await fixture.client(server: try await closedServerURL(), fallback: ["com.example.client.bundled"])
            .products(platform: .iOS, appVersion: "2.3.1")
        #expect(list.source == .fallback)
        #expect(list.identifiers == ["com.example.client.bundled"])
        #expect(list.error?.code == .transport)
        #expect(list.isStale)
    }

    /// A 4xx is not retried (the server counted one request) and does not empty the list.
    @Test func unknownAppFallsBackWithoutRetrying() async throws {
        let fixture = try ServedCatalog(ids: Self.ids)
        defer { fixture.remove() }
        try await fixture.serve { server, counters in
            let client = fixture.client(server: server) {
                $0.app = "com.example.unknown"
                $0.fetchAttempts = 3
            }
            let list = await client.products(platform: .iOS, appVersion: "2.3.1")
            #expect(list.source == .fallback)
            #expect(list.status == 404)
            #expect(list.error?.code == .rejected)
            #expect(list.error?.message == "HTTP 404: no published app 'com.example.unknown'")
            let notFound = try await counters.requests("products", 404)
            #expect(notFound == 1)
        }
    }

    /// A 200 that is not a feed (a captive portal's page) never replaces the cached list.
    @Test func aBodyThatIsNotAFeedKeepsTheCachedList() async throws {
        let fixture = try ServedCatalog(ids: Self.ids)
        defer { fixture.remove() }
        try await fixture.serve { server, _ in
            let client = fixture.client(server: server)
            let portal = try #require(URL(string: "/readyz", relativeTo: server)?.absoluteURL)
            let list = await client.products(from: portal, revalidate: false)
            #expect(list.source == .fallback)
            #expect(list.error?.code == .malformedResponse)
            #expect(list.identifiers == ["com.example.client.bundled"])
        }
    }

    /// Calls made together share one request: the server answered a single feed request.
    @Test func concurrentCallsShareOneRequest() async throws {
        let fixture = try ServedCatalog(ids: Self.ids)
        defer { fixture.remove() }
        try await fixture.serve(cacheControl: "public, max-age=300") { server, counters in
            let client = fixture.client(server: server)
            let lists = await withTaskGroup(of: ProductList.self) { group in
                for _ in 0..<20 { group.addTask { await client.products(platform: .iOS, appVersion: "2.3.1") } }
                return await group.reduce(into: []) { $0.append($1) }
            }
            #expect(lists.count == 20)
            #expect(lists.allSatisfy { $0.identifiers == Self.ids })
            #expect(lists.allSatisfy { $0.source == .network || $0.source == .freshCache }, "\(lists.map(\.source))")
            let requests = try await counters.allRequests()
            #expect(requests == 1)
        }
    }
}
