import CatalogClient
import CatalogKit
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Synchronization
import Testing

/// Signed feeds as an app meets them, attacks included: a stand-in host on loopback answers
/// whatever bytes and signatures a test gives it, signed with keys the test makes, and a
/// `CatalogClient` in each mode judges them. The checks follow TUF's client workflow: verify before
/// parsing, never go below the highest revision accepted (kept in the data directory, so a
/// relaunch or a doctored cache changes nothing), treat an equal revision as a no-op, refuse an
/// expired signature, and keep serving the last verified list when a new one fails.
@Suite struct SignatureTests {
    static let app = "com.example.client"
    static let path = "/v1/apps/\(app)/products.json"
    /// What a client on iOS at 2.3.1 asks for: the variant `ios/any` of an app with iOS and macOS feeds.
    static let variants = ["ios/any"]

    /// A root key and what it certifies: what `catalog keys create` and `rotate` make.
    struct Keys {
        let root = Ed25519PrivateKey()

        func signer(
            certifiedFor lifetime: TimeInterval = 30 * 86_400, from: Date = Date(), signatures: TimeInterval = 3600,
            revocations: String? = nil
        )
            throws -> FeedSigner
        {
            let key = Ed25519PrivateKey()
            let certificate = KeyCertificate.issue(for: key.publicKey, by: root, now: from, lifetime: lifetime)
            return try FeedSigner(key: key.certified(certificate, revocations: revocations), lifetime: signatures)
        }

        func policy(_ mode: CatalogClient.SignaturePolicy.Mode, grace: TimeInterval = 60) -> CatalogClient.SignaturePolicy {
            CatalogClient.SignaturePolicy(mode: mode, rootKeys: [root.publicKey], grace: grace)
        }
    }

    /// A feed and its signature as a host serves them.
    struct Served: Sendable {
        var body: Data
        var signature: String?
        /// Whether the signature comes as `Catalog-Signature` (catalog serve) or only as the `.jws`
        /// beside the feed (a static host).
        var inHeader = true
        /// Answer 503 instead: the host is down.
        var down = false

        var entityTag: String { "\"\(body.hashValue)\"" }
    }

    static func feed(_ ids: [String]) -> Data {
        Data(("[" + ids.map { "\"\($0)\"" }.joined(separator: ",") + "]").utf8)
    }

    /// `ids` signed as revision `revision` of `app`'s products feed for `variants`.
    static func signed(
        _ ids: [String], revision: Int, by signer: FeedSigner, app: String = app, feed: String = "products.json",
        variants: [String] = variants, now: Date = Date()
    ) throws -> Served {
        let body = Self.feed(ids)
        let claims = FeedClaims(
            app: app, feed: feed, variants: variants, platforms: ["ios", "macos"], bands: [], rev: revision, from: Int64(revision))
        return Served(body: body, signature: try signer.sign([UInt8](body), claims: claims, now: now))
    }

    /// Serves `served` (changed by the test at will) during `body`, with a client directory.
    static func withHost(
        _ first: Served, _ body: @Sendable (_ server: URL, _ serve: @Sendable (Served) -> Void, _ directory: URL) async throws -> Void
    ) async throws {
        let current = Mutex(first)
        let router = Router()
        router.get(RouterPath(path)) { request, _ in
            let served = current.withLock { $0 }
            if served.down { return Response(status: .serviceUnavailable) }
            var headers: HTTPFields = [.eTag: served.entityTag, .cacheControl: "no-cache"]
            if served.inHeader, let signature = served.signature { headers[HTTPField.Name(FeedSigner.httpHeader)!] = signature }
            if request.headers[.ifNoneMatch] == served.entityTag { return Response(status: .notModified, headers: headers) }
            headers[.contentType] = "application/json"
            return Response(status: .ok, headers: headers, body: .init(byteBuffer: .init(bytes: served.body)))
        }
        router.get(RouterPath(path + ".jws")) { _, _ in
            guard let signature = current.withLock({ $0.signature }) else { return Response(status: .notFound) }
            return Response(status: .ok, body: .init(byteBuffer: .init(string: signature)))
        }
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("signed-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        try await Application(router: router, configuration: .init(address: .hostname("127.0.0.1", port: 0))).test(.live) { client in
            let port = try #require(client.port)
            let server = try #require(URL(string: "http://127.0.0.1:\(port)"))
            try await body(server, { served in current.withLock { $0 = served } }, directory)
        }
    }

    /// A client as an app makes one (a new one on the same directory is the app relaunched).
    static func client(
        _ server: URL, _ directory: URL, _ policy: CatalogClient.SignaturePolicy,
        _ configure: (inout CatalogClient.Configuration) -> Void = { _ in }
    ) -> CatalogClient {
        var configuration = CatalogClient.Configuration(
            server: server, app: app, fallbackIdentifiers: ["com.example.client.bundled"], directory: directory)
        configuration.signatures = policy
        configuration.fetchAttempts = 1
        configuration.sendsReportsAutomatically = false
        configuration.log = { _ in }
        configure(&configuration)
        return CatalogClient(configuration: configuration)
    }

    static func fetch(_ client: CatalogClient) async -> ProductList {
        await client.refresh(platform: .iOS, appVersion: "2.3.1")
    }

    static func failure(_ list: ProductList) -> String { list.error?.message ?? "" }

    // MARK: - What is accepted

    @Test func aSignedFeedIsAcceptedAndItsRevisionKept() async throws {
        let keys = Keys()
        let signer = try keys.signer()
        try await Self.withHost(try Self.signed(["a", "b"], revision: 1, by: signer)) { server, _, directory in
            let list = await Self.fetch(Self.client(server, directory, keys.policy(.enforce)))
            #expect(list.source == .network)
            #expect(list.identifiers == ["a", "b"])
            #expect(list.signedRevision == 1)
            #expect(list.error == nil)
        }
    }

    @Test func aStaticHostsSignatureFileIsFetchedBesideTheFeed() async throws {
        let keys = Keys()
        var served = try Self.signed(["a"], revision: 1, by: try keys.signer())
        served.inHeader = false
        try await Self.withHost(served) { server, _, directory in
            let list = await Self.fetch(Self.client(server, directory, keys.policy(.enforce)))
            #expect(list.source == .network)
            #expect(list.signedRevision == 1)
        }
    }

    @Test func bothKeysVerifyWhileARotationOverlaps() async throws {
        let keys = Keys()
        let old = try keys.signer()
        let new = try keys.signer()
        try await Self.withHost(try Self.signed(["a"], revision: 1, by: old)) { server, serve, directory in
            let client = Self.client(server, directory, keys.policy(.enforce))
            #expect(await Self.fetch(client).signedRevision == 1)
            serve(try Self.signed(["a", "b"], revision: 2, by: new))
            #expect(await Self.fetch(client).signedRevision == 2)
            // A replica still on the old key publishes the next revision: both keys are certified.
            serve(try Self.signed(["a", "b", "c"], revision: 3, by: old))
            let third = await Self.fetch(client)
            #expect(third.signedRevision == 3)
            #expect(third.identifiers == ["a", "b", "c"])
        }
    }

    // MARK: - Attacks, each refused with the last verified list kept

    @Test func tamperedBytesAreRefusedAndTheVerifiedListKept() async throws {
        let keys = Keys()
        let signer = try keys.signer()
        try await Self.withHost(try Self.signed(["a"], revision: 1, by: signer)) { server, serve, directory in
            let client = Self.client(server, directory, keys.policy(.enforce))
            #expect(await Self.fetch(client).identifiers == ["a"])
            var tampered = try Self.signed(["a", "b"], revision: 2, by: signer)
            tampered.body = Self.feed(["a", "evil"])
            serve(tampered)
            let list = await Self.fetch(client)
            #expect(list.source == .staleCache)
            #expect(list.identifiers == ["a"])
            #expect(list.error?.code == .signature)
            #expect(Self.failure(list).contains("badSignature"), "\(Self.failure(list))")
        }
    }

    @Test func aKeyTheRootDidNotCertifyIsRefused() async throws {
        let keys = Keys()
        let stranger = Keys()
        try await Self.withHost(try Self.signed(["a"], revision: 1, by: try stranger.signer())) { server, _, directory in
            let list = await Self.fetch(Self.client(server, directory, keys.policy(.enforce)))
            #expect(list.source == .fallback)
            #expect(list.identifiers == ["com.example.client.bundled"])
            #expect(Self.failure(list).contains("untrustedKey"), "\(Self.failure(list))")
        }
    }

    @Test func aSigningKeyWhoseCertificateExpiredSignsNothingAndItsOldSignaturesExpire() async throws {
        let keys = Keys()
        let expired = try keys.signer(certifiedFor: 60, from: Date() - 3600)
        #expect(throws: SignatureError.self) { try Self.signed(["a"], revision: 1, by: expired) }
        // Signed while the certificate was valid: the signature cannot outlive it, so it has expired too.
        let old = try Self.signed(["a"], revision: 1, by: expired, now: Date() - 3590)
        try await Self.withHost(old) { server, _, directory in
            let list = await Self.fetch(Self.client(server, directory, keys.policy(.enforce)))
            #expect(list.source == .fallback)
            #expect(Self.failure(list).contains("expired"), "\(Self.failure(list))")
        }
    }

    @Test func aRevokedKeyIsRefusedOnceTheRevocationWasSeenEvenAfterARelaunch() async throws {
        let keys = Keys()
        let compromised = try keys.signer()
        let revocation = KeyRevocations.issue([compromised.key.kid], version: 1, by: keys.root, now: Date())
        let successor = try keys.signer(revocations: revocation)
        try await Self.withHost(try Self.signed(["a"], revision: 1, by: compromised)) { server, serve, directory in
            #expect(await Self.fetch(Self.client(server, directory, keys.policy(.enforce))).signedRevision == 1)
            serve(try Self.signed(["a", "b"], revision: 2, by: successor))
            #expect(await Self.fetch(Self.client(server, directory, keys.policy(.enforce))).signedRevision == 2)
            // Whoever holds the revoked key signs a higher revision: refused, after a relaunch too.
            serve(try Self.signed(["evil"], revision: 9, by: compromised))
            let list = await Self.fetch(Self.client(server, directory, keys.policy(.enforce)))
            #expect(list.identifiers == ["a", "b"])
            #expect(Self.failure(list).contains("revokedKey"), "\(Self.failure(list))")
        }
        // A key pinned as revoked in the app is refused without any statement.
        let pinned = CatalogClient.SignaturePolicy(mode: .enforce, rootKeys: [keys.root.publicKey], revokedKeys: [compromised.key.kid])
        try await Self.withHost(try Self.signed(["a"], revision: 1, by: compromised)) { server, _, directory in
            #expect(Self.failure(await Self.fetch(Self.client(server, directory, pinned))).contains("revokedKey"))
        }
    }

    @Test func aReplayOfAnOlderRevisionIsRefusedAcrossRelaunches() async throws {
        let keys = Keys()
        let signer = try keys.signer()
        let first = try Self.signed(["a", "retired.product"], revision: 1, by: signer)
        try await Self.withHost(first) { server, serve, directory in
            #expect(await Self.fetch(Self.client(server, directory, keys.policy(.enforce))).signedRevision == 1)
            serve(try Self.signed(["a"], revision: 2, by: signer))
            #expect(await Self.fetch(Self.client(server, directory, keys.policy(.enforce))).signedRevision == 2)
            serve(first)
            let relaunched = Self.client(server, directory, keys.policy(.enforce))
            let list = await Self.fetch(relaunched)
            #expect(list.source == .staleCache)
            #expect(list.identifiers == ["a"])
            #expect(Self.failure(list).contains("rollback"), "\(Self.failure(list))")
        }
    }

    @Test func anEqualRevisionIsANoOpButARefreshedSignatureIsKept() async throws {
        let keys = Keys()
        let signer = try keys.signer()
        try await Self.withHost(try Self.signed(["a"], revision: 2, by: signer)) { server, serve, directory in
            let client = Self.client(server, directory, keys.policy(.enforce))
            #expect(await Self.fetch(client).identifiers == ["a"])
            // The same revision with other bytes (only the signer could make it): the list stays.
            serve(try Self.signed(["a", "other"], revision: 2, by: signer))
            let same = await Self.fetch(client)
            #expect(same.identifiers == ["a"])
            #expect(same.error == nil)
            // The same bytes re-signed later: accepted, nothing changes but the signature.
            serve(try Self.signed(["a"], revision: 2, by: signer, now: Date() + 5))
            let refreshed = await Self.fetch(client)
            #expect(refreshed.identifiers == ["a"])
            #expect(refreshed.signedRevision == 2)
        }
    }

    @Test func aFrozenFeedIsRefusedOnceItsSignatureExpires() async throws {
        let keys = Keys()
        // Signatures good for an hour, and a grace of a minute; the host then keeps answering 304
        // with the same signature, as a frozen mirror would, while the client's clock moves on.
        let signer = try keys.signer(signatures: 3600)
        let now = Mutex(Date())
        var clocked = keys.policy(.enforce, grace: 60)
        clocked.clock = { now.withLock { $0 } }
        let policy = clocked
        try await Self.withHost(try Self.signed(["a"], revision: 1, by: signer)) { server, _, directory in
            let client = Self.client(server, directory, policy)
            #expect(await Self.fetch(client).signedRevision == 1)
            now.withLock { $0 += 3600 + 30 }
            #expect(await Self.fetch(client).error == nil, "within the grace")
            now.withLock { $0 += 60 }
            let list = await Self.fetch(client)
            #expect(list.source == .staleCache)
            #expect(list.identifiers == ["a"])
            #expect(Self.failure(list).contains("expired"), "\(Self.failure(list))")
        }
    }

    @Test(arguments: [
        (app: "com.example.client", feed: "products.json", variants: ["macos/any"], why: "another variant"),
        (app: "com.example.other", feed: "products.json", variants: SignatureTests.variants, why: "another app"),
        (app: "com.example.client", feed: "catalog.json", variants: SignatureTests.variants, why: "another feed kind"),
    ])
    func aSignatureMadeForAnotherFeedIsRefused(binding: (app: String, feed: String, variants: [String], why: String)) async throws {
        let keys = Keys()
        let served = try Self.signed(
            ["a"], revision: 1, by: try keys.signer(), app: binding.app, feed: binding.feed, variants: binding.variants)
        try await Self.withHost(served) { server, _, directory in
            let list = await Self.fetch(Self.client(server, directory, keys.policy(.enforce)))
            #expect(list.source == .fallback, "\(binding.why)")
            #expect(Self.failure(list).contains("wrongBinding"), "\(binding.why): \(Self.failure(list))")
        }
    }

    @Test func aMissingSignatureIsRefusedInEnforceAndReportedInReportMode() async throws {
        let keys = Keys()
        try await Self.withHost(Served(body: Self.feed(["a"]), signature: nil)) { server, _, directory in
            let enforced = await Self.fetch(Self.client(server, directory, keys.policy(.enforce)))
            #expect(enforced.source == .fallback)
            #expect(Self.failure(enforced).contains("missing"))
            let reported = await Self.fetch(Self.client(server, directory.appendingPathComponent("report"), keys.policy(.report)))
            #expect(reported.source == .network)
            #expect(reported.identifiers == ["a"])
            #expect(reported.signatureIssue?.message.contains("missing") == true)
            let off = await Self.fetch(Self.client(server, directory.appendingPathComponent("off"), .off))
            #expect(off.identifiers == ["a"])
            #expect(off.signatureIssue == nil)
        }
    }

    /// The bug TUF clients shipped: a cached copy trusted before the rollback check. The cache is
    /// a file anyone with the device's disk can replace with an older, validly signed feed.
    @Test func aCachedOlderFeedIsNotTrustedOnLoad() async throws {
        let keys = Keys()
        let signer = try keys.signer()
        try await Self.withHost(try Self.signed(["old"], revision: 1, by: signer)) { server, serve, directory in
            #expect(await Self.fetch(Self.client(server, directory, keys.policy(.enforce))).identifiers == ["old"])
            let cache = directory.appendingPathComponent("cache")
            let saved = directory.appendingPathComponent("saved-cache")
            try FileManager.default.copyItem(at: cache, to: saved)
            serve(try Self.signed(["new"], revision: 2, by: signer))
            #expect(await Self.fetch(Self.client(server, directory, keys.policy(.enforce))).identifiers == ["new"])
            try FileManager.default.removeItem(at: cache)
            try FileManager.default.copyItem(at: saved, to: cache)
            // The host is down now: only the (doctored) cache could answer, after a relaunch.
            serve(Served(body: Data(), signature: nil, down: true))
            let list = await Self.fetch(Self.client(server, directory, keys.policy(.enforce)))
            #expect(list.source == .fallback)
            #expect(list.identifiers == ["com.example.client.bundled"])
        }
    }

    @Test func aBundledSnapshotIsUsedOnlyWhenItVerifies() async throws {
        let keys = Keys()
        let signer = try keys.signer(certifiedFor: 60 * 86_400, from: Date() - 30 * 86_400, signatures: 1)
        let bundled = try Self.signed(["bundled.signed"], revision: 1, by: signer, now: Date() - 20 * 86_400)
        let nowhere = try #require(URL(string: "http://127.0.0.1:9"))
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("bundled-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        // Long expired: a bundled snapshot is a floor, not news, so expiry does not count.
        let trusted = await Self.fetch(
            Self.client(nowhere, directory, keys.policy(.enforce)) {
                $0.bundledFeed = CatalogClient.BundledFeed(body: bundled.body, signature: bundled.signature)
            })
        #expect(trusted.source == .fallback)
        #expect(trusted.identifiers == ["bundled.signed"])
        #expect(trusted.signedRevision == 1)
        let tampered = await Self.fetch(
            Self.client(nowhere, directory, keys.policy(.enforce)) {
                $0.bundledFeed = CatalogClient.BundledFeed(body: Self.feed(["bundled.evil"]), signature: bundled.signature)
            })
        #expect(tampered.identifiers == ["com.example.client.bundled"])
    }

    /// The attack: a feed signed for a scheduled change (its `from` a day ahead) served before its
    /// moment. Accepted, it would raise the client's highest `(rev, from)`, so that the feed in
    /// force now looked like a rollback until the day came.
    @Test func aSignatureWhoseFromLiesInTheFutureIsRefused() async throws {
        let keys = Keys()
        let signer = try keys.signer()
        let body = Self.feed(["early"])
        let ahead = Int64(Date().timeIntervalSince1970) + 86_400
        let claims = FeedClaims(
            app: Self.app, feed: "products.json", variants: Self.variants, platforms: ["ios", "macos"], bands: [], rev: 1, from: ahead)
        let early = Served(body: body, signature: try signer.sign([UInt8](body), claims: claims, now: Date()))
        try await Self.withHost(early) { server, serve, directory in
            let list = await Self.fetch(Self.client(server, directory, keys.policy(.enforce)))
            #expect(list.source == .fallback)
            #expect(Self.failure(list).contains("notYetValid"), "\(Self.failure(list))")
            // Within the allowed clock skew, it is the feed in force.
            var near = claims
            near.from = Int64(Date().timeIntervalSince1970) + 60
            serve(Served(body: body, signature: try signer.sign([UInt8](body), claims: near, now: Date())))
            let accepted = await Self.fetch(Self.client(server, directory, keys.policy(.enforce)))
            #expect(accepted.source == .network, "\(Self.failure(accepted))")
        }
    }

    /// The attack: whoever holds a signing key signs a feed that stays trusted for a year (within
    /// the key's certificate), so that a frozen mirror is never noticed. `exp - iat` past the
    /// documented maximum is refused, whatever the certificate allows.
    @Test func aSignatureLongerThanTheMaximumLifetimeIsRefused() async throws {
        let keys = Keys()
        let signer = try keys.signer(certifiedFor: 800 * 86_400)
        let genuine = try Self.signed(["frozen"], revision: 1, by: signer)
        let forged = try Self.stretched(try #require(genuine.signature), over: genuine.body, to: 365 * 86_400, by: signer)
        try await Self.withHost(Served(body: genuine.body, signature: forged)) { server, _, directory in
            let list = await Self.fetch(Self.client(server, directory, keys.policy(.enforce)))
            #expect(list.source == .fallback)
            #expect(Self.failure(list).contains("lifetime"), "\(Self.failure(list))")
        }
    }

    /// `signature` re-signed by `signer`'s key with `exp = iat + lifetime`: what a holder of the
    /// key can make, whatever `FeedSigner` allows.
    static func stretched(_ signature: String, over body: Data, to lifetime: Int64, by signer: FeedSigner) throws -> String {
        let parts = signature.split(separator: ".", omittingEmptySubsequences: false)
        let headerBytes = try #require(Base64URL.decode(parts[0]))
        var header = try #require(try JSONSerialization.jsonObject(with: headerBytes) as? [String: Any])
        let issued = try #require((header["iat"] as? NSNumber)?.int64Value)
        header["exp"] = issued + lifetime
        let encoded = Base64URL.encode(try JSONSerialization.data(withJSONObject: header, options: [.sortedKeys]))
        let hex = ContentHash.sha256Hex([UInt8](body))
        var digest: [UInt8] = []
        var index = hex.startIndex
        while index < hex.endIndex {
            let next = hex.index(index, offsetBy: 2)
            digest.append(try #require(UInt8(hex[index..<next], radix: 16)))
            index = next
        }
        let input = Data("\(encoded).\(Base64URL.encode(digest))".utf8)
        return "\(encoded)..\(Base64URL.encode(signer.key.signature(for: input)))"
    }

    // MARK: - Through catalog build and catalog serve

    /// Item 4 of signing: a rollback publishes the old content as a new, higher revision, which an
    /// enforcing client accepts; replaying the old revision itself (its exact bytes and signature,
    /// as a stale mirror would) is refused.
    @Test func aRollbackIsAcceptedWhereAReplayOfTheOldRevisionIsRefused() async throws {
        let keys = Keys()
        let fixture = try ServedCatalog(ids: ["com.example.client.a"], signer: try keys.signer())
        defer { fixture.remove() }
        try fixture.publish(["com.example.client.a", "com.example.client.b"])
        try await fixture.serve { server, _ in
            let client = fixture.client(server: server) { $0.signatures = keys.policy(.enforce) }
            let second = await client.refresh(platform: .iOS, appVersion: "2.3.1")
            #expect(second.signedRevision == 2)
            #expect(second.identifiers.contains("com.example.client.b"))
            _ = try fixture.workflow.rollback(app: ServedCatalog.app, to: 1, at: .now, author: "test", message: nil)
            var rolledBack = await client.refresh(platform: .iOS, appVersion: "2.3.1")
            for _ in 0..<50 where rolledBack.signedRevision != 3 {
                try await Task.sleep(for: .milliseconds(100))
                rolledBack = await client.refresh(platform: .iOS, appVersion: "2.3.1")
            }
            #expect(rolledBack.signedRevision == 3)
            #expect(rolledBack.source == .network)
            #expect(!rolledBack.identifiers.contains("com.example.client.b"))
        }
        // Revision 1 as published, bytes and signature, for the variant this client gets.
        let manifest = try fixture.publicTree.manifest(ServedCatalog.app, revision: 1)
        let record = try #require(manifest.record(for: Variant(platform: .iOS, band: nil)))
        let bytes = try fixture.publicTree.feedBytes(ServedCatalog.app, revision: 1, directory: record.directory, name: "products.json")
        let signature = RevisionSignatures.read(
            fixture.publicTree, app: ServedCatalog.app, revision: 1, state: 0, directory: record.directory, kind: .products)
        try await Self.withHost(Served(body: Data(bytes), signature: signature)) { server, _, _ in
            let client = fixture.client(server: server) { $0.signatures = keys.policy(.enforce) }
            let replayed = await client.refresh(platform: .iOS, appVersion: "2.3.1")
            #expect(replayed.error?.code == .signature)
            #expect(replayed.error?.message.contains("rollback") == true, "\(String(describing: replayed.error))")
        }
    }
}
