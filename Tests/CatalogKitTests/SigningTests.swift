import CatalogKit
import CatalogTestSupport
import FeedSigning
import Foundation
import Testing
import Time

/// Signed publications (docs/contract.md section 2, "Signing"): every feed a build writes carries a
/// detached JWS over the SHA-256 of its exact bytes, bound to its app, kind, variants, revision and
/// moment, beside it in the revision and in the static tree; scheduled states are signed for their
/// own moment; the gzip copy is covered; a refresh re-issues signatures without touching bytes or
/// validators.
@Suite struct SigningTests {
    static let root = Ed25519PrivateKey()

    static func signer(lifetime: TimeInterval = 3600) throws -> FeedSigner {
        let key = Ed25519PrivateKey()
        let certificate = KeyCertificate.issue(for: key.publicKey, by: root, now: Date() - 60, lifetime: 86_400)
        return try FeedSigner(key: key.certified(certificate), lifetime: lifetime)
    }

    static let verifier = FeedSignatureVerifier(roots: [root.publicKey], grace: 0)

    /// Platforms and a version band, so that variants share files and differ.
    static let source = plist(
        """
        <dict>
        \t<key>platforms</key><array><string>iOS</string><string>macOS</string></array>
        \t<key>products</key>
        \t<array>
        \t\t<dict><key>id</key><string>com.example.signed.coins</string></dict>
        \t\t<dict><key>id</key><string>com.example.signed.mac</string><key>platforms</key><array><string>macOS</string></array></dict>
        \t\t<dict><key>id</key><string>com.example.signed.new</string><key>minimumAppVersion</key><string>2.0</string></dict>
        \t</array>
        </dict>
        """)

    private func signedCatalog(_ source: String, app: String) throws -> TemporaryCatalog {
        let catalog = try TemporaryCatalog()
        try catalog.write("\(app).plist", source)
        var workflow = catalog.workflow
        workflow.signer = try Self.signer()
        let build = try workflow.build(at: buildMoment, dryRun: false)
        #expect(!build.hasErrors, "\(build.diagnostics)")
        return catalog
    }

    /// Publishing reads no wall clock of its own: signatures are issued at the publisher's clock.
    @Test func signaturesAreIssuedAtTheInjectedClock() throws {
        let app = "com.example.signed"
        let catalog = try TemporaryCatalog()
        defer { try? FileManager.default.removeItem(at: catalog.root) }
        try catalog.write("\(app).plist", Self.source)
        var workflow = catalog.workflow
        workflow.signer = try Self.signer()
        // Within the certificate's validity, and a whole second that no real clock would give now.
        let signedAt = Date(timeIntervalSince1970: (Date().timeIntervalSince1970 - 30).rounded(.down))
        let build = try workflow.build(at: buildMoment, dryRun: false, publisher: { $0.clock = { signedAt } })
        #expect(!build.hasErrors, "\(build.diagnostics)")
        let record = try #require(try catalog.tree.currentManifest(app)?.variants.first)
        let signature = try #require(
            RevisionSignatures.read(catalog.tree, app: app, revision: 1, state: 0, directory: record.directory, kind: .products))
        #expect(try FeedSignatureVerifier.unverifiedClaims(signature).iat == Int64(signedAt.timeIntervalSince1970))
    }

    @Test func everyFeedOfEveryVariantIsSignedForWhatItServes() throws {
        let app = "com.example.signed"
        let catalog = try signedCatalog(Self.source, app: app)
        defer { try? FileManager.default.removeItem(at: catalog.root) }
        let tree = catalog.tree
        let manifest = try #require(try tree.currentManifest(app))
        #expect(manifest.variants.count == 9)
        for record in manifest.variants {
            for kind in FeedKind.allCases {
                let bytes = try tree.feedBytes(app, revision: 1, directory: record.directory, name: kind.rawValue)
                let signature = try #require(
                    RevisionSignatures.read(tree, app: app, revision: 1, state: 0, directory: record.directory, kind: kind))
                let claims = try Self.verifier.verify(signature, over: bytes, now: Date()).claims
                #expect(claims.app == app)
                #expect(claims.feed == kind.rawValue)
                #expect(claims.rev == 1)
                #expect(claims.from == manifest.publishedAt.secondsSince1970)
                #expect(claims.variants.contains("\(record.platform)/\(record.band)"))
                // What the client checks: the request this variant answers is covered.
                let platform = record.platform == "any" ? nil : record.platform
                let version = record.band == "any" ? nil : record.band
                #expect(claims.covers(app: app, feed: kind.rawValue, platform: platform, appVersion: version))
            }
        }
        // The static tree carries the default variant's signature beside its feed.
        let staticBytes = try #require(catalog.published("v1/apps/\(app)/products.json"))
        let staticSignature = String(decoding: try #require(catalog.published("v1/apps/\(app)/products.json.jws")), as: UTF8.self)
        _ = try Self.verifier.verify(staticSignature, over: staticBytes, now: Date())
        // A signature for iOS does not pass for macOS: their selections differ.
        let ios = try #require(manifest.record(for: Variant(platform: .iOS, band: nil)))
        let iosSignature = try #require(
            RevisionSignatures.read(tree, app: app, revision: 1, state: 0, directory: ios.directory, kind: .products))
        let iosClaims = try FeedSignatureVerifier.unverifiedClaims(iosSignature)
        #expect(!iosClaims.covers(app: app, feed: "products.json", platform: "macos", appVersion: nil))
        #expect(!iosClaims.covers(app: "com.example.other", feed: "products.json", platform: "ios", appVersion: nil))
    }

    @Test func theGzipCopyIsCoveredAndATamperedOneFails() throws {
        let app = "com.example.signed"
        let catalog = try signedCatalog(Self.source, app: app)
        defer { try? FileManager.default.removeItem(at: catalog.root) }
        let signature = String(decoding: try #require(catalog.published("v1/apps/\(app)/products.json.jws")), as: UTF8.self)
        let gzip = try #require(catalog.published("v1/apps/\(app)/products.json.gz"))
        let decoded = try #require(Gzip.decompress(gzip))
        _ = try Self.verifier.verify(signature, over: decoded, now: Date())
        let tampered = try Gzip.compress(Array(#"["com.example.signed.coins","com.example.evil"]"#.utf8), effort: .fastest)
        #expect(throws: SignatureError.self) {
            try Self.verifier.verify(signature, over: try #require(Gzip.decompress(tampered)), now: Date())
        }
    }

    /// A scheduled change is signed for its own moment, even where it serves bytes another state
    /// served before (here: the state after the window is the state before it), so that a client
    /// that saw the window's feed accepts the one after it and refuses the one before.
    @Test func scheduledStatesAreSignedForTheirOwnMoment() throws {
        let app = "com.example.timed"
        let catalog = try signedCatalog(ScheduleTests.source, app: app)
        defer { try? FileManager.default.removeItem(at: catalog.root) }
        let (index, problems) = FeedIndex.load(catalog.tree)
        #expect(problems.isEmpty)
        func claims(at moment: Timestamp) throws -> FeedClaims {
            let feed = try index.feed(app: app, kind: .products, platform: nil, appVersion: nil, at: moment).get()
            let signature = try #require(feed.signature)
            return try Self.verifier.verify(signature, over: feed.identity.bytes, now: Date()).claims
        }
        let before = try claims(at: ScheduleTests.opens.adding(-1))
        let during = try claims(at: ScheduleTests.opens)
        let after = try claims(at: ScheduleTests.closes)
        #expect(during.from == ScheduleTests.opens.secondsSince1970)
        #expect(after.from == ScheduleTests.closes.secondsSince1970)
        #expect(before.version < during.version && during.version < after.version)
        // Scheduled signatures are not public before their moment.
        let publicFiles = FileManager.default.enumerator(atPath: catalog.publicDirectory.path)?.allObjects as? [String] ?? []
        #expect(!publicFiles.contains { $0.contains("scheduled") })
    }

    @Test func aRefreshReissuesSignaturesAndLeavesBytesAndValidators() throws {
        let app = "com.example.signed"
        let catalog = try signedCatalog(Self.source, app: app)
        defer { try? FileManager.default.removeItem(at: catalog.root) }
        let manifestBefore = catalog.published("v1/apps/\(app)/manifest.json")
        let feedBefore = catalog.published("v1/apps/\(app)/products.json")
        let signatureBefore = catalog.published("v1/apps/\(app)/products.json.jws")
        var workflow = catalog.workflow
        workflow.signer = try Self.signer()
        // Nothing expires within a minute: nothing is written.
        #expect(try workflow.refreshSignatures(at: Date(), window: 60) == 0)
        #expect(catalog.published("v1/apps/\(app)/products.json.jws") == signatureBefore)
        // Within two hours, every one: two per folder of feeds.
        let folders = Set(try #require(try catalog.tree.currentManifest(app)).variants.map(\.directory))
        let written = try workflow.refreshSignatures(at: Date() + 1, window: 7200)
        #expect(written == folders.count * 2)
        let signatureAfter = try #require(catalog.published("v1/apps/\(app)/products.json.jws"))
        #expect(signatureAfter != signatureBefore)
        #expect(catalog.published("v1/apps/\(app)/manifest.json") == manifestBefore)
        #expect(catalog.published("v1/apps/\(app)/products.json") == feedBefore)
        let claims = try Self.verifier.verify(String(decoding: signatureAfter, as: UTF8.self), over: try #require(feedBefore), now: Date())
            .claims
        #expect(claims.rev == 1)
        // The server reads the new one with the same validators.
        let feed = try FeedIndex.load(catalog.tree).index.feed(app: app, kind: .products, platform: nil, appVersion: nil, at: .now).get()
        // The server sends it as Catalog-Signature (FeedResponseTests.theSignatureTravelsOn200And304).
        #expect(feed.signature == String(decoding: signatureAfter, as: UTF8.self))
    }

    /// A signature in the first form published (over the bytes themselves, RFC 7797 `b64:false`)
    /// is refused as malformed, and a refresh, even one that re-issues nothing expiring, replaces it.
    @Test func aSignatureOfTheFirstFormIsRefusedAndReplacedByARefresh() throws {
        let app = "com.example.signed"
        let catalog = try signedCatalog(Self.source, app: app)
        defer { try? FileManager.default.removeItem(at: catalog.root) }
        let feed = try #require(catalog.published("v1/apps/\(app)/products.json"))
        let signature = String(decoding: try #require(catalog.published("v1/apps/\(app)/revisions/1/products.json.jws")), as: UTF8.self)
        let parts = signature.split(separator: ".", omittingEmptySubsequences: false)
        let headerBytes = try #require(Base64URL.decode(parts[0]))
        var header = try #require(try JSONSerialization.jsonObject(with: headerBytes) as? [String: Any])
        header["digest"] = nil
        header["b64"] = false
        header["crit"] = ["b64"]
        let firstForm = Base64URL.encode(try JSONSerialization.data(withJSONObject: header)) + ".." + parts[2]
        #expect(throws: SignatureError.self) { try Self.verifier.verify(firstForm, over: feed, now: Date()) }
        let url = catalog.publicDirectory.appendingPathComponent("v1/apps/\(app)/revisions/1/products.json.jws")
        try Data(firstForm.utf8).write(to: url, options: .atomic)

        var workflow = catalog.workflow
        workflow.signer = try Self.signer()
        #expect(try workflow.refreshSignatures(at: Date(), window: 60) == 1)
        let replaced = String(decoding: try Data(contentsOf: url), as: UTF8.self)
        #expect(try Self.verifier.verify(replaced, over: feed, now: Date()).claims.rev == 1)
        #expect(catalog.published("v1/apps/\(app)/products.json.jws") == Array(replaced.utf8))
    }

    @Test func anUnsignedBuildRemovesTheStaticSignatureOfTheOneBefore() throws {
        let app = "com.example.signed"
        let catalog = try signedCatalog(Self.source, app: app)
        defer { try? FileManager.default.removeItem(at: catalog.root) }
        #expect(catalog.published("v1/apps/\(app)/products.json.jws") != nil)
        try catalog.write(
            "\(app).plist",
            Self.source.replacingOccurrences(
                of: "com.example.signed.new</string>", with: "com.example.signed.new</string><key>displayOrder</key><integer>1</integer>"))
        let build = try catalog.workflow.build(at: buildMoment.adding(10), dryRun: false)
        #expect(build.plans.first?.isUnchanged == false)
        #expect(catalog.published("v1/apps/\(app)/products.json.jws") == nil)
    }

    @Test func theSignerRefusesAKeyWithoutItsCertificateOrWithAnotherKeys() throws {
        let key = Ed25519PrivateKey()
        #expect(throws: SignatureError.self) { try FeedSigner(key: key) }
        let other = KeyCertificate.issue(for: Ed25519PrivateKey().publicKey, by: Self.root, now: Date(), lifetime: 60)
        #expect(throws: SignatureError.self) { try FeedSigner(key: key.certified(other)) }
        // A key file read back is the same key, certificate included; its private part never in the public JWK.
        let certified = key.certified(KeyCertificate.issue(for: key.publicKey, by: Self.root, now: Date(), lifetime: 60))
        let reread = try Ed25519PrivateKey(jwk: certified.jwk)
        #expect(reread.kid == key.kid)
        #expect(reread.certificate == certified.certificate)
        #expect(!String(decoding: key.publicKey.jwk, as: UTF8.self).contains("\"d\""))
    }
}
