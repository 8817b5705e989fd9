import CatalogKit
import CatalogServer
import CatalogTestSupport
import FeedSigning
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Logging
import Testing
import Time

/// `catalog serve` answers each variant's own path (docs/serving.md) with exactly what the query
/// form answers for that variant: bytes, ETag, Last-Modified, signature, 304s; `variants.json`
/// with its entity tag; and a 404 for a variant that is not published, as a static host would.
@Suite struct VariantPathServingTests {
    static let app = CatalogServerTests.app

    /// Platforms iOS and macOS and a band from 2.0, signed.
    static func fixture() throws -> CatalogServerTests.Fixture {
        let fixture = try CatalogServerTests.Fixture(ids: ["com.example.served.coins"])
        let text = """
            <?xml version="1.0" encoding="UTF-8"?>
            <plist version="1.0"><dict><key>platforms</key><array><string>iOS</string><string>macOS</string></array>
            <key>products</key><array>
            <dict><key>id</key><string>com.example.served.coins</string></dict>
            <dict><key>id</key><string>com.example.served.mac</string><key>platforms</key><array><string>macOS</string></array></dict>
            <dict><key>id</key><string>com.example.served.new</string><key>minimumAppVersion</key><string>2.0</string></dict>
            </array></dict></plist>
            """
        try Data(text.utf8).write(to: fixture.catalog.appendingPathComponent("\(app).plist"))
        var workflow = CatalogWorkflow(
            catalogDirectory: fixture.catalog, catalogDisplayPath: "catalog", publicDirectory: fixture.publicTree.root)
        workflow.signer = try SignedServingTests.signer()
        let build = try workflow.build(at: Timestamp(secondsSince1970: Timestamp.now.secondsSince1970 - 5), dryRun: false)
        #expect(!build.hasErrors, "\(build.diagnostics)")
        return fixture
    }

    @Test func variantPathsAnswerAsTheQueryForm() async throws {
        let fixture = try Self.fixture()
        defer { fixture.remove() }
        let manifest = try #require(try fixture.publicTree.currentManifest(Self.app))
        #expect(manifest.bands == ["0.0", "2.0"])
        try await fixture.application().test(.live) { client in
            for record in manifest.variants where !(record.platform == "any" && record.band == "any") {
                for kind in ["products.json", "catalog.json"] {
                    var query: [String] = []
                    if record.platform != "any" { query.append("platform=\(record.platform)") }
                    if record.band != "any" { query.append("appVersion=\(record.band)") }
                    let byQuery = try await client.execute(
                        uri: "/v1/apps/\(Self.app)/\(kind)" + (query.isEmpty ? "" : "?" + query.joined(separator: "&")), method: .get)
                    let path = "/v1/apps/\(Self.app)/variants/\(record.platform)/\(record.band)/\(kind)"
                    let byPath = try await client.execute(uri: path, method: .get)
                    #expect(byPath.status == .ok, "\(path)")
                    #expect(Array(byPath.body.readableBytesView) == Array(byQuery.body.readableBytesView), "\(path)")
                    for field in [HTTPField.Name.eTag, .lastModified, .cacheControl, SignedServingTests.signatureName] {
                        #expect(byPath.headers[field] != nil && byPath.headers[field] == byQuery.headers[field], "\(path) \(field)")
                    }
                    // Published bytes, signed for this variant.
                    let onDisk = try fixture.publicTree.feedBytes(
                        Self.app, revision: manifest.revision, directory: record.directory, name: kind)
                    #expect(Array(byPath.body.readableBytesView) == onDisk)
                    let signature = try #require(byPath.headers[SignedServingTests.signatureName])
                    let claims = try SignedServingTests.verifier.verify(signature, over: onDisk, now: Date()).claims
                    #expect(claims.variants.contains("\(record.platform)/\(record.band)"))

                    let etag = try #require(byPath.headers[.eTag])
                    let notModified = try await client.execute(uri: path, method: .get, headers: [.ifNoneMatch: etag])
                    #expect(notModified.status == .notModified, "\(path)")
                    let head = try await client.execute(uri: path, method: .head)
                    #expect(head.status == .ok)
                    #expect(head.headers[.eTag] == etag)
                }
            }
        }
    }

    /// What a static host holds, `catalog serve` answers, and nothing else: a variant that is not
    /// published, or spelt otherwise than the index spells it, is a 404; the default's path is the
    /// app's own.
    @Test(arguments: [
        "variants/any/any/products.json", "variants/ios/3.0/products.json", "variants/watchos/any/products.json",
        "variants/ios/2/products.json", "variants/ios/2.0/manifest.json", "variants/ios/products.json",
    ])
    func unpublishedVariantPathsAre404(_ path: String) async throws {
        let fixture = try Self.fixture()
        defer { fixture.remove() }
        try await fixture.application().test(.live) { client in
            let response = try await client.execute(uri: "/v1/apps/\(Self.app)/\(path)", method: .get)
            #expect(response.status == .notFound, "\(path)")
        }
    }

    @Test func theVariantIndexIsServedWithItsEntityTag() async throws {
        let fixture = try Self.fixture()
        defer { fixture.remove() }
        let published = try #require(
            FileManager.default.contents(atPath: fixture.publicTree.appDirectory(Self.app).appendingPathComponent("variants.json").path))
        try await fixture.application().test(.live) { client in
            let index = try await client.execute(uri: "/v1/apps/\(Self.app)/variants.json", method: .get)
            #expect(index.status == .ok)
            #expect(Array(index.body.readableBytesView) == [UInt8](published), "the very bytes catalog build wrote")
            let etag = try #require(index.headers[.eTag])
            #expect(etag == ContentHash.entityTag(sha256: ContentHash.sha256Hex([UInt8](published))))
            let notModified = try await client.execute(
                uri: "/v1/apps/\(Self.app)/variants.json", method: .get, headers: [.ifNoneMatch: etag])
            #expect(notModified.status == .notModified)
            let unknown = try await client.execute(uri: "/v1/apps/com.example.unknown/variants.json", method: .get)
            #expect(unknown.status == .notFound)
        }
    }
}
