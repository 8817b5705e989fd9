import CatalogKit
import Foundation
import HTTPSemantics
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Logging
import Testing
import Time

@testable import CatalogServer

/// `catalog serve` through real HTTP on loopback.
@Suite struct CatalogServerTests {
    static let app = "com.example.served"

    /// A published tree with one app on iOS and macOS, built now.
    struct Fixture {
        let root: URL
        var catalog: URL { root.appendingPathComponent("catalog") }
        var publicTree: PublicTree { PublicTree(root: root.appendingPathComponent("public")) }

        init(ids: [String], at moment: Timestamp? = nil) throws {
            root = FileManager.default.temporaryDirectory.appendingPathComponent("server-\(UUID().uuidString)")
            try FileManager.default.createDirectory(at: root.appendingPathComponent("catalog"), withIntermediateDirectories: true)
            if let moment { try publish(ids, at: moment) } else { try publish(ids) }
        }

        /// Publishes `ids`, by default ten seconds ago: a publication in the current second shows a
        /// Last-Modified held back to stay behind Date (see FeedResponse), which most tests do not test.
        func publish(_ ids: [String], at moment: Timestamp = Timestamp(secondsSince1970: Timestamp.now.secondsSince1970 - 10)) throws {
            let products = ids.map { "<dict><key>id</key><string>\($0)</string></dict>" }.joined()
            let text = """
                <?xml version="1.0" encoding="UTF-8"?>
                <plist version="1.0"><dict><key>platforms</key><array><string>iOS</string><string>macOS</string></array>
                <key>products</key><array>\(products)
                <dict><key>id</key><string>com.example.served.mac</string><key>platforms</key><array><string>macOS</string></array></dict>
                </array></dict></plist>
                """
            try Data(text.utf8).write(to: catalog.appendingPathComponent("\(CatalogServerTests.app).plist"))
            let workflow = CatalogWorkflow(catalogDirectory: catalog, catalogDisplayPath: "catalog", publicDirectory: publicTree.root)
            let build = try workflow.build(at: moment, dryRun: false)
            #expect(!build.hasErrors)
        }

        func application(reloadInterval: Duration = .milliseconds(100)) -> some ApplicationProtocol {
            buildApplication(publicDirectory: publicTree, port: 0, reloadInterval: reloadInterval, logger: Logger(label: "test"))
        }

        func remove() {
            try? FileManager.default.removeItem(at: root)
        }
    }

    static let feedPath = "/v1/apps/\(app)/products.json"

    @Test func servesTheFeedWithItsValidators() async throws {
        let fixture = try Fixture(ids: ["com.example.served.coins"])
        defer { fixture.remove() }
        let manifest = try #require(try fixture.publicTree.currentManifest(Self.app))
        try await fixture.application().test(.live) { client in
            let response = try await client.execute(uri: Self.feedPath, method: .get)
            #expect(response.status == .ok)
            #expect(String(buffer: response.body) == #"["com.example.served.coins","com.example.served.mac"]"#)
            #expect(response.headers[.eTag] == manifest.variants[0].products.entityTag)
            #expect(response.headers[.lastModified] == HTTPDate.format(manifest.variants[0].products.lastModified))
            #expect(response.headers[.cacheControl] == "public, max-age=300")
            #expect(response.headers[.vary] == "Accept-Encoding")
            #expect(response.headers[.contentType] == "application/json")
            #expect(response.headers[.date] != nil)

            let ios = try await client.execute(uri: Self.feedPath + "?platform=ios", method: .get)
            #expect(String(buffer: ios.body) == #"["com.example.served.coins"]"#)

            let head = try await client.execute(uri: Self.feedPath, method: .head)
            #expect(head.status == .ok)
            #expect(head.body.readableBytes == 0)
            #expect(head.headers[.eTag] == response.headers[.eTag])
            #expect(head.headers[.contentLength] == response.headers[.contentLength])
        }
    }

    @Test func revalidationGetsNotModifiedWithoutABody() async throws {
        let fixture = try Fixture(ids: ["com.example.served.coins"])
        defer { fixture.remove() }
        try await fixture.application().test(.live) { client in
            let first = try await client.execute(uri: Self.feedPath, method: .get)
            let etag = try #require(first.headers[.eTag])
            let lastModified = try #require(first.headers[.lastModified])
            for headers: HTTPFields in [
                [.ifNoneMatch: etag], [.ifNoneMatch: #""other", \#(etag)"#], [.ifNoneMatch: "*"], [.ifModifiedSince: lastModified],
            ] {
                let response = try await client.execute(uri: Self.feedPath, method: .get, headers: headers)
                #expect(response.status == .notModified, "\(headers)")
                #expect(response.body.readableBytes == 0)
                #expect(response.headers[.eTag] == etag)
                #expect(response.headers[.lastModified] == lastModified)
                #expect(response.headers[.cacheControl] != nil && response.headers[.vary] != nil && response.headers[.date] != nil)
                #expect(response.headers[.contentType] == nil)
            }
            // If-None-Match decides alone: a stale tag means 200 even with a matching date.
            let stale = try await client.execute(
                uri: Self.feedPath, method: .get, headers: [.ifNoneMatch: #""stale""#, .ifModifiedSince: lastModified])
            #expect(stale.status == .ok)
        }
    }

    @Test func gzipIsServedWhenAcceptedWithItsOwnTag() async throws {
        let fixture = try Fixture(ids: ["com.example.served.coins"])
        defer { fixture.remove() }
        try await fixture.application().test(.live) { client in
            let plain = try await client.execute(uri: Self.feedPath, method: .get)
            let gzip = try await client.execute(uri: Self.feedPath, method: .get, headers: [.acceptEncoding: "gzip"])
            #expect(gzip.headers[.contentEncoding] == "gzip")
            #expect(gzip.headers[.eTag] != plain.headers[.eTag])
            #expect(Gzip.decompress(Array(buffer: gzip.body)) == Array(buffer: plain.body))
        }
    }

    @Test func errorsAreJSONWithTheRightStatus() async throws {
        let fixture = try Fixture(ids: ["com.example.served.coins"])
        defer { fixture.remove() }
        try await fixture.application().test(.live) { client in
            let cases: [(String, HTTPRequest.Method, HTTPResponse.Status, String)] = [
                ("/nope", .get, .notFound, "no such resource: /nope"),
                ("/v1/apps/com.example.none/products.json", .get, .notFound, "no published app 'com.example.none'"),
                ("/v1/apps/../products.json", .get, .notFound, "no such resource: /v1/apps/../products.json"),
                (
                    "/v1/apps/com.example.served%2F..%2Fx/products.json", .get, .notFound,
                    "no such resource: /v1/apps/com.example.served%2F..%2Fx/products.json"
                ),
                (
                    Self.feedPath + "?platform=fireos", .get, .badRequest,
                    "unknown platform 'fireos'; expected ios, macos, tvos, watchos, visionos or android"
                ),
                (Self.feedPath + "?appVersion=two", .get, .badRequest, "appVersion 'two' is not a version such as 2.3.1"),
                ("/v1/apps/\(Self.app)/revisions/99/products.json", .get, .notFound, "no revision 99 of app '\(Self.app)'"),
                (Self.feedPath, .post, .methodNotAllowed, "POST is not allowed here; use GET or HEAD"),
            ]
            for (uri, method, status, message) in cases {
                let response = try await client.execute(uri: uri, method: method)
                #expect(response.status == status, "\(uri)")
                #expect(response.headers[.contentType] == "application/json")
                #expect(String(buffer: response.body) == #"{"error":{"message":"\#(message)"}}"#, "\(uri)")
                if status == .methodNotAllowed { #expect(response.headers[.allow] == "GET, HEAD") }
            }
        }
    }

    @Test func indexesRevisionsAndHealth() async throws {
        let fixture = try Fixture(ids: ["com.example.served.coins"])
        defer { fixture.remove() }
        try fixture.publish(["com.example.served.coins", "com.example.served.gems"], at: Timestamp.now.adding(1))
        try await fixture.application().test(.live) { client in
            let apps = try await client.execute(uri: "/v1/apps", method: .get)
            // Keys sorted, as ServiceJSON writes every object: publishedAt comes before revision.
            #expect(String(buffer: apps.body).hasPrefix(#"{"apps":[{"app":"com.example.served","publishedAt":""#))
            #expect(try JSONDecoder().decode(AppList.self, from: Data(String(buffer: apps.body).utf8)).apps.first?.revision == 2)
            let revisions = try await client.execute(uri: "/v1/apps/\(Self.app)/revisions", method: .get)
            #expect(String(buffer: revisions.body).contains(#""revisions":[{"publishedAt":""#))
            #expect(
                try JSONDecoder().decode(RevisionList.self, from: Data(String(buffer: revisions.body).utf8)).revisions.first?.revision == 2)
            let old = try await client.execute(uri: "/v1/apps/\(Self.app)/revisions/1/products.json", method: .get)
            #expect(String(buffer: old.body) == #"["com.example.served.coins","com.example.served.mac"]"#)
            #expect(old.headers[.cacheControl] == "public, max-age=31536000, immutable")
            #expect(try await client.execute(uri: "/healthz", method: .get).status == .ok)
            #expect(String(buffer: try await client.execute(uri: "/readyz", method: .get).body) == #"{"status":"ready","apps":1}"#)
        }
    }

    /// A revision published while the server runs is served within a second, no restart.
    @Test func newRevisionsAreServedWithoutRestart() async throws {
        let fixture = try Fixture(ids: ["com.example.served.coins"])
        defer { fixture.remove() }
        try await fixture.application().test(.live) { client in
            let before = try await client.execute(uri: Self.feedPath, method: .get)
            try fixture.publish(["com.example.served.coins", "com.example.served.gems"], at: Timestamp.now.adding(1))
            var served = ""
            for _ in 0..<20 {
                try await Task.sleep(for: .milliseconds(50))
                served = String(buffer: try await client.execute(uri: Self.feedPath, method: .get).body)
                if served.contains("gems") { break }
            }
            #expect(served == #"["com.example.served.coins","com.example.served.gems","com.example.served.mac"]"#)
            let after = try await client.execute(uri: Self.feedPath, method: .get)
            #expect(after.headers[.eTag] != before.headers[.eTag])
        }
    }
}

extension Timestamp {
    fileprivate func adding(_ seconds: Int64) -> Timestamp {
        Timestamp(secondsSince1970: secondsSince1970 + seconds)
    }
}

@Suite struct MetricsTests {
    @Test func metricsCountRequestsByRouteAndStatusAndShowRevisions() async throws {
        let fixture = try CatalogServerTests.Fixture(ids: ["com.example.served.coins"])
        defer { fixture.remove() }
        try await fixture.application().test(.live) { client in
            let first = try await client.execute(uri: CatalogServerTests.feedPath, method: .get)
            let etag = try #require(first.headers[.eTag])
            _ = try await client.execute(uri: CatalogServerTests.feedPath, method: .get, headers: [.ifNoneMatch: etag])
            _ = try await client.execute(uri: CatalogServerTests.feedPath, method: .get, headers: [.ifNoneMatch: etag])
            // Back to a 200 on the same connection: counted under its own labels again.
            _ = try await client.execute(uri: CatalogServerTests.feedPath, method: .get)
            _ = try await client.execute(uri: "/v1/apps/\(CatalogServerTests.app)/nope", method: .get)
            let metrics = try await client.execute(uri: "/metrics", method: .get)
            #expect(metrics.headers[.contentType] == "text/plain; version=0.0.4")
            let lines = String(buffer: metrics.body).split(separator: "\n").map(String.init)
            #expect(lines.contains(#"catalog_http_requests_total{route="products",status="200"} 2"#))
            #expect(lines.contains(#"catalog_http_requests_total{route="products",status="304"} 2"#))
            #expect(lines.contains(#"catalog_http_requests_total{route="unknown",status="404"} 1"#))
            #expect(
                lines.contains(#"catalog_http_response_body_bytes_total{route="products",status="200"} \#(2 * first.body.readableBytes)"#))
            #expect(lines.contains(#"catalog_feed_revision{app="com.example.served"} 1.0"#))
            #expect(lines.contains("catalog_feed_reloads_total 0"))
        }
    }
}
