import CatalogKit
import CatalogServer
import CatalogTestSupport
import Foundation
import HummingbirdTesting
import Logging
import Storage
import Testing

/// Where a report came from, over real HTTP from chosen loopback addresses (127.0.N.x are
/// distinct /24 networks) into a real SQLite file: which address counts, which headers are
/// believed, what one network's rate is, and what is stored at all.
@Suite struct ReportTrustTests {
    static let path = "/v1/apps/\(CatalogServerTests.app)/invalid-identifiers"
    static let json = [("Content-Type", "application/json")]
    /// A product report: coins invalid, mac (also published) fine.
    static let productReport =
        #"{"invalidProductIdentifiers":["com.example.served.coins"],"requestedProductIdentifiers":["com.example.served.coins","com.example.served.mac"],"environment":"production""#

    static func body(install: String, extra: String = "") -> String {
        productReport + #","installId":"\#(install)""# + extra + "}"
    }

    /// A served fixture, a SQLite store and `configure`d reports; `body` gets the port, the store
    /// and the server's metrics.
    static func withServer(
        _ configure: (inout ReportsConfiguration) -> Void = { _ in },
        _ body: @Sendable (Int, SQLiteStore, ServerMetrics) async throws -> Void
    ) async throws {
        let fixture = try CatalogServerTests.Fixture(ids: ["com.example.served.coins"])
        defer { fixture.remove() }
        let store = try await SQLiteStore.open(path: fixture.root.appendingPathComponent("var/catalog.sqlite").path)
        var reports = ReportsConfiguration()
        reports.perAddress = nil
        reports.perInstall = nil
        configure(&reports)
        let metrics = ServerMetrics()
        let app = buildApplication(
            publicDirectory: fixture.publicTree, port: 0, reportStore: store, reportsConfiguration: reports, metrics: metrics,
            logger: Logger(label: "test"))
        try await app.test(.live) { client in try await body(try #require(client.port), store, metrics) }
    }

    static func evidence(_ store: SQLiteStore) async throws -> NetworkEvidence? {
        try await store.networkEvidence(AggregateQuery(app: CatalogServerTests.app)).first
    }

    static func post(
        from source: String, port: Int, _ body: String, headers: [(String, String)] = []
    ) async throws -> LoopbackClient.Answer {
        try await LoopbackClient.send(from: source, port: port, path: path, headers: json + headers, body: body)
    }

    /// Without a trusted proxy, forwarding headers name no one: ten reports claiming ten
    /// networks from one machine are one network.
    @Test func spoofedForwardingHeadersFromAnUntrustedPeerAreIgnored() async throws {
        try await Self.withServer { port, store, _ in
            for index in 0..<10 {
                let answer = try await Self.post(
                    from: "127.0.0.1", port: port, Self.body(install: "i\(index)"),
                    headers: [("X-Forwarded-For", "198.51.\(index).1"), ("Forwarded", "for=203.0.\(index).7")])
                #expect(answer.status == 202, "\(answer.text)")
            }
            let evidence = try #require(try await Self.evidence(store))
            #expect(evidence.reports == 10 && evidence.networks == 1 && evidence.networkInstalls == 1)
        }
    }

    /// Behind a trusted proxy, the rightmost untrusted address of the header it writes
    /// (`X-Forwarded-For` by default) is the client; a peer outside the trusted range is itself
    /// the client whatever it sends.
    @Test func aTrustedProxysForwardedClientsAreTheNetworks() async throws {
        try await Self.withServer({ $0.trustedProxies = [AddressRange(cidr: "127.0.0.1/32")!] }) { port, store, _ in
            for index in 0..<3 {
                let answer = try await Self.post(
                    from: "127.0.0.1", port: port, Self.body(install: "x\(index)"),
                    headers: [("X-Forwarded-For", "6.6.6.6, 198.51.\(index).1")])
                #expect(answer.status == 202, "\(answer.text)")
            }
            // Spoofed, from a peer that is not a trusted proxy: its own /24, once.
            for index in 0..<4 {
                let answer = try await Self.post(
                    from: "127.0.9.\(index + 1)", port: port, Self.body(install: "s\(index)"),
                    headers: [("X-Forwarded-For", "198.51.\(100 + index).1")])
                #expect(answer.status == 202, "\(answer.text)")
            }
            let evidence = try #require(try await Self.evidence(store))
            #expect(evidence.networks == 4, "three by X-Forwarded-For, 127.0.9.0/24")
        }
    }

    /// The attack of issue 26: nginx appends `X-Forwarded-For` and passes a client's own
    /// `Forwarded` through untouched. One machine sent 120 reports, each with its own
    /// `Forwarded: for=198.51.N.7`, and each counted as a network. Now only the header the
    /// proxy writes is read: they are one network, the machine's.
    @Test func aClientsOwnForwardedHeaderBehindAnXForwardedForProxyNamesNoNetwork() async throws {
        try await Self.withServer({ $0.trustedProxies = [AddressRange(cidr: "127.0.0.1/32")!] }) { port, store, _ in
            for index in 0..<120 {
                let answer = try await Self.post(
                    from: "127.0.0.1", port: port, Self.body(install: "spoof\(index)"),
                    headers: [("Forwarded", "for=198.51.\(index).7"), ("X-Forwarded-For", "127.0.3.9")])
                #expect(answer.status == 202, "\(answer.text)")
            }
            let evidence = try #require(try await Self.evidence(store))
            #expect(evidence.reports == 120 && evidence.networks == 1, "\(evidence)")
        }
    }

    /// A proxy configured to write `Forwarded` is read there alone: a client's own
    /// `X-Forwarded-For` names no one.
    @Test func aProxyThatWritesForwardedIsReadAlone() async throws {
        try await Self.withServer({
            $0.trustedProxies = [AddressRange(cidr: "127.0.0.1/32")!]
            $0.forwardingHeader = .forwarded
        }) { port, store, _ in
            for index in 0..<2 {
                let answer = try await Self.post(
                    from: "127.0.0.1", port: port, Self.body(install: "f\(index)"),
                    headers: [
                        ("Forwarded", #"for="[2001:db\#(index)::1]:4711", for=127.0.0.1"#), ("X-Forwarded-For", "198.51.\(index).1"),
                    ])
                #expect(answer.status == 202, "\(answer.text)")
            }
            let evidence = try #require(try await Self.evidence(store))
            #expect(evidence.networks == 2, "two IPv6 /32s by Forwarded; X-Forwarded-For unread")
        }
    }

    /// The rate limit's bucket is the network: another address in the same /24 shares it,
    /// another /24 has its own.
    @Test func rateLimitsKeyOnTheNetwork() async throws {
        try await Self.withServer({ $0.perAddress = RateLimit(perMinute: 1, burst: 2) }) { port, store, _ in
            #expect(try await Self.post(from: "127.0.5.1", port: port, Self.body(install: "a")).status == 202)
            #expect(try await Self.post(from: "127.0.5.2", port: port, Self.body(install: "b")).status == 202)
            let limited = try await Self.post(from: "127.0.5.3", port: port, Self.body(install: "c"))
            #expect(limited.status == 429)
            #expect(limited.text.contains("Retry-After: "))
            #expect(limited.text.contains("too many reports from this network"))
            #expect(try await Self.post(from: "127.0.6.1", port: port, Self.body(install: "d")).status == 202)
            #expect(try await Self.evidence(store)?.reports == 3)
        }
    }

    /// Identifiers the app never published are counted in a tally, not stored one by one; a
    /// report of nothing else stores nothing.
    @Test func onlyPublishedIdentifiersAreStored() async throws {
        try await Self.withServer { port, store, metrics in
            let made = #"{"invalidProductIdentifiers":["com.example.made_up","com.example.also_made_up"],"environment":"production"}"#
            let answer = try await Self.post(from: "127.0.0.1", port: port, made)
            #expect(answer.status == 202)
            #expect(answer.text.hasSuffix(#"{"accepted":2,"stored":0}"#))
            let mixed = #"{"invalidProductIdentifiers":["com.example.made_up","com.example.served.coins"],"environment":"production"}"#
            #expect(try await Self.post(from: "127.0.0.1", port: port, mixed).text.hasSuffix(#"{"accepted":2,"stored":1}"#))
            let aggregates = try await store.aggregate(AggregateQuery())
            #expect(aggregates.map(\.identifier) == ["com.example.served.coins"])
            let exposition = String(decoding: metrics.render(), as: UTF8.self)
            #expect(exposition.contains(#"catalog_reports_unpublished_identifiers_total{app="com.example.served"} 3"#), "\(exposition)")
        }
    }

    /// A report carrying an AppTransaction the App Store signed for this app counts as a
    /// verified install; a forged, foreign or mismatched one leaves the report unverified but
    /// accepted.
    @Test func verifiedAppTransactionsCountAsVerifiedInstalls() async throws {
        let pki = try AppStoreTestPKI.make()
        let verifier = try pki.verifier()
        let genuine = try pki.appTransactionJWS(bundleID: CatalogServerTests.app, environment: "Production", appTransactionID: "tx-1")
        let second = try pki.appTransactionJWS(bundleID: CatalogServerTests.app, environment: "Production", appTransactionID: "tx-2")
        let foreign = try pki.appTransactionJWS(bundleID: "com.example.other", environment: "Production", appTransactionID: "tx-3")
        let sandbox = try pki.appTransactionJWS(bundleID: CatalogServerTests.app, environment: "Sandbox", appTransactionID: "tx-4")
        let forged = try AppStoreTestPKI.make().appTransactionJWS(
            bundleID: CatalogServerTests.app, environment: "Production", appTransactionID: "tx-5")
        try await Self.withServer({ $0.appTransactions = verifier }) { port, store, metrics in
            for (index, jws) in [genuine, genuine, second, foreign, sandbox, forged].enumerated() {
                let answer = try await Self.post(
                    from: "127.0.0.1", port: port, Self.body(install: "i\(index)", extra: #","appTransaction":"\#(jws)""#))
                #expect(answer.status == 202, "\(answer.text)")
            }
            let evidence = try #require(try await Self.evidence(store))
            #expect(evidence.verifiedInstalls == 2, "tx-1 (twice) and tx-2")
            #expect(evidence.networks == 1 && evidence.networkInstalls == 1, "the unverified ones: one network")
            let exposition = String(decoding: metrics.render(), as: UTF8.self)
            #expect(exposition.contains(#"catalog_reports_app_transactions_total{result="verified"} 3"#), "\(exposition)")
            #expect(exposition.contains(#"catalog_reports_app_transactions_total{result="unverified"} 3"#))
        }
    }
}
