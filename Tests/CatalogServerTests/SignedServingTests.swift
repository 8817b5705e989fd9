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

/// `catalog serve` sends each feed's signature as `Catalog-Signature` (docs/serving.md): on 200,
/// on 304 (so that a re-issued signature reaches a client that revalidates), on HEAD and with gzip,
/// on the lean path and from revision snapshots; a refresh is served within a second with the
/// same validators.
@Suite struct SignedServingTests {
    static let root = Ed25519PrivateKey()
    static let verifier = FeedSignatureVerifier(roots: [root.publicKey], grace: 0)
    static let signatureName = HTTPField.Name(FeedSigner.httpHeader)!

    static func signer() throws -> FeedSigner {
        let key = Ed25519PrivateKey()
        return try FeedSigner(key: key.certified(KeyCertificate.issue(for: key.publicKey, by: root, now: Date() - 60, lifetime: 86_400)))
    }

    /// A fixture published unsigned, then signed the way `catalog serve --signing-key` does at start.
    static func signedFixture() throws -> (CatalogServerTests.Fixture, CatalogWorkflow) {
        let fixture = try CatalogServerTests.Fixture(ids: ["com.example.served.coins"])
        var workflow = CatalogWorkflow(
            catalogDirectory: fixture.catalog, catalogDisplayPath: "catalog", publicDirectory: fixture.publicTree.root)
        workflow.signer = try signer()
        #expect(try workflow.refreshSignatures(at: Date(), window: 3600) > 0)
        return (fixture, workflow)
    }

    @Test func everyFeedAnswerCarriesItsSignature() async throws {
        let (fixture, _) = try Self.signedFixture()
        defer { fixture.remove() }
        try await fixture.application().test(.live) { client in
            let path = CatalogServerTests.feedPath + "?platform=ios"
            let ok = try await client.execute(uri: path, method: .get)
            #expect(ok.status == .ok)
            let signature = try #require(ok.headers[Self.signatureName])
            let body = Array(ok.body.readableBytesView)
            let claims = try Self.verifier.verify(signature, over: body, now: Date()).claims
            #expect(claims.covers(app: CatalogServerTests.app, feed: "products.json", platform: "ios", appVersion: nil))

            let etag = try #require(ok.headers[.eTag])
            let notModified = try await client.execute(uri: path, method: .get, headers: [.ifNoneMatch: etag])
            #expect(notModified.status == .notModified)
            #expect(notModified.headers[Self.signatureName] == signature)

            let head = try await client.execute(uri: path, method: .head)
            #expect(head.headers[Self.signatureName] == signature)

            let snapshot = try await client.execute(uri: "/v1/apps/\(CatalogServerTests.app)/revisions/1/products.json", method: .get)
            let snapshotSignature = try #require(snapshot.headers[Self.signatureName])
            #expect(try Self.verifier.verify(snapshotSignature, over: Array(snapshot.body.readableBytesView), now: Date()).claims.rev == 1)
        }
    }

    @Test func theLeanPathSendsItForGzipToo() async throws {
        let (fixture, _) = try Self.signedFixture()
        defer { fixture.remove() }
        try await fixture.application().test(.live) { client in
            let port = try #require(client.port)
            let answer = try await LoopbackClient.send(
                from: "127.0.0.1", port: port, method: "GET", path: CatalogServerTests.feedPath, headers: [("Accept-Encoding", "gzip")])
            #expect(answer.status == 200)
            let lines = answer.text.split(separator: "\r\n")
            #expect(lines.contains { $0.lowercased() == "content-encoding: gzip" })
            let signature = try #require(lines.first { $0.hasPrefix("\(FeedSigner.httpHeader): ") }).dropFirst(
                FeedSigner.httpHeader.count + 2)
            let feed = try #require(try fixture.publicTree.currentManifest(CatalogServerTests.app)?.variants.first)
            let bytes = try fixture.publicTree.feedBytes(
                CatalogServerTests.app, revision: 1, directory: feed.directory, name: "products.json")
            #expect(try Self.verifier.verify(String(signature), over: bytes, now: Date()).claims.rev == 1)
        }
    }

    /// The attack: a `.jws` file (written by whoever can write the tree, or restored from a
    /// store row) holding CR LF and a header of its own. Sent as it is, it would add `Set-Cookie`
    /// to every feed response. A signature that is not a compact JWS's characters is refused at
    /// load: the feed is served without it (an enforcing client keeps its last verified list).
    @Test func aSignatureFileCannotInjectAHeader() async throws {
        let (fixture, _) = try Self.signedFixture()
        defer { fixture.remove() }
        var doctored = 0
        let files = FileManager.default.enumerator(at: fixture.publicTree.root, includingPropertiesForKeys: nil)
        while let url = files?.nextObject() as? URL {
            guard url.pathExtension == "jws" else { continue }
            let genuine = try String(contentsOf: url, encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)
            try FileManager.default.removeItem(at: url)
            try Data((genuine + "\r\nSet-Cookie: session=stolen\r\nX-Injected: \u{0}yes").utf8).write(to: url)
            doctored += 1
        }
        #expect(doctored > 0)
        try await fixture.application().test(.live) { client in
            let port = try #require(client.port)
            for path in [CatalogServerTests.feedPath, CatalogServerTests.feedPath + "?platform=ios"] {
                for headers in [[("Accept-Encoding", "gzip")], []] {
                    let answer = try await LoopbackClient.send(from: "127.0.0.1", port: port, method: "GET", path: path, headers: headers)
                    #expect(answer.status == 200)
                    let head = answer.text.components(separatedBy: "\r\n\r\n")[0].lowercased()
                    #expect(!head.contains("set-cookie"), "\(head)")
                    #expect(!head.contains("x-injected"), "\(head)")
                    #expect(!head.contains(FeedSigner.httpHeader.lowercased()), "served without the refused signature")
                }
            }
            let snapshot = try await client.execute(uri: "/v1/apps/\(CatalogServerTests.app)/revisions/1/products.json", method: .get)
            #expect(snapshot.status == .ok)
            #expect(snapshot.headers[.setCookie] == nil)
            #expect(snapshot.headers[Self.signatureName] == nil)
        }
    }

    @Test func aRefreshIsServedWithinASecondWithTheSameValidators() async throws {
        let (fixture, workflow) = try Self.signedFixture()
        defer { fixture.remove() }
        try await fixture.application().test(.live) { client in
            let first = try await client.execute(uri: CatalogServerTests.feedPath, method: .get)
            let before = try #require(first.headers[Self.signatureName])
            #expect(try workflow.refreshSignatures(at: Date() + 2, window: nil) > 0)
            var after = before
            var etag = first.headers[.eTag]
            for _ in 0..<30 where after == before {
                try await Task.sleep(for: .milliseconds(100))
                let response = try await client.execute(uri: CatalogServerTests.feedPath, method: .get)
                after = try #require(response.headers[Self.signatureName])
                etag = response.headers[.eTag]
            }
            #expect(after != before)
            #expect(etag == first.headers[.eTag])
            #expect(
                try Self.verifier.verify(after, over: Array(first.body.readableBytesView), now: Date()).claims.iat
                    > (try FeedSignatureVerifier.unverifiedClaims(before)).iat)
        }
    }
}
