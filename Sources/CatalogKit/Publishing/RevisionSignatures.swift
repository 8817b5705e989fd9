import FeedSigning
import Foundation
import Time

/// Where a revision's feed signatures are and what each binds (see `FeedSigner` in FeedSigning).
///
/// One signature per feed file and state: the state now (0), and each scheduled state ahead
/// (1, 2, …), since the same bytes may serve several states and each state has its own moment.
/// ```
/// revisions/<n>/<directory><feed>.jws                                   state 0: public, beside the feed
/// (records) revisions/<n>/scheduled/signatures/<k>/<directory><feed>.jws   state k: private until its moment
/// ```
/// Signatures are the only files of a revision that are replaced after it is published: they are
/// re-issued before they expire (``refresh(_:in:signer:now:window:)``), over the same bytes.
public enum RevisionSignatures {
    /// The extension of a signature file, appended to its feed's name: `products.json.jws`.
    public static let fileExtension = ".jws"

    /// The path of a feed's signature in `state`, relative to the revision folder.
    public static func relativePath(state: Int, directory: String, kind: FeedKind) -> String {
        (state == 0 ? "" : "scheduled/signatures/\(state)/") + directory + kind.rawValue + fileExtension
    }

    /// The states of a manifest, in order: the variants now, then each scheduled change.
    static func states(of manifest: RevisionManifest) -> [(from: Timestamp, variants: [VariantRecord])] {
        [(manifest.publishedAt, manifest.variants)] + (manifest.schedule ?? []).map { ($0.from, $0.variants) }
    }

    /// What the signature of the feed of `kind` in `directory` binds in `state`.
    static func claims(_ manifest: RevisionManifest, state: Int, directory: String, kind: FeedKind) -> FeedClaims {
        let (from, records) = states(of: manifest)[state]
        return FeedClaims(
            app: manifest.app, feed: kind.rawValue,
            variants: records.filter { $0.directory == directory }.map { "\($0.platform)/\($0.band)" },
            platforms: manifest.platforms.map(\.rawValue), bands: manifest.bands, rev: manifest.revision,
            from: from.secondsSince1970)
    }

    /// The states (by index) in which the files of `directory` are served.
    static func statesServing(_ directory: String, in manifest: RevisionManifest) -> [Int] {
        states(of: manifest).enumerated().filter { $0.element.variants.contains { $0.directory == directory } }.map(\.offset)
    }

    /// The SHA-256 the manifest records for the bytes of the feed of `kind` in `directory`, in
    /// `state`: what its signature signs, hashed once when the revision was planned.
    static func sha256(_ manifest: RevisionManifest, state: Int, directory: String, kind: FeedKind) throws -> Data {
        let record = states(of: manifest)[state].variants.first { $0.directory == directory }
        guard let record, let digest = ContentHash.bytes(hex: kind == .products ? record.products.sha256 : record.catalog.sha256) else {
            throw CatalogError.io(path: directory + kind.rawValue, message: "the revision's manifest records no SHA-256 for this feed")
        }
        return Data(digest)
    }

    /// The signatures of the feed of `kind` in `directory`, one for each state that serves it,
    /// with their paths relative to the revision folder. Each is made from the SHA-256 the
    /// manifest records, so signing reads no feed: the bytes are the ones that digest was taken of.
    static func sign(
        kind: FeedKind, directory: String, manifest: RevisionManifest, signer: FeedSigner, now: Date
    ) throws -> [(path: String, signature: String)] {
        try statesServing(directory, in: manifest).map { state in
            let signature = try signer.sign(
                sha256: sha256(manifest, state: state, directory: directory, kind: kind),
                claims: claims(manifest, state: state, directory: directory, kind: kind), now: now)
            return (relativePath(state: state, directory: directory, kind: kind), signature)
        }
    }

    /// The signature of a feed as published, if the revision was signed.
    public static func read(_ tree: PublicTree, app: String, revision: Int, state: Int, directory: String, kind: FeedKind) -> String? {
        let url = tree.revisionFileURL(app, revision, relativePath(state: state, directory: directory, kind: kind))
        guard let data = FileManager.default.contents(atPath: url.path) else { return nil }
        return String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// Re-issues the signatures of an app's current revision that expire within `window` (all of
    /// them when `window` is nil), over the same bytes (the digests its manifest records), so that
    /// the feed and its validators stay as they are. The static copies of the signatures (the
    /// default's and every variant path's) are replaced too.
    /// - Returns: how many signatures were written.
    @discardableResult
    public static func refresh(
        _ app: String, in tree: PublicTree, signer: FeedSigner, now: Date, window: TimeInterval?
    ) throws -> Int {
        guard let manifest = try tree.currentManifest(app) else { return 0 }
        let revision = manifest.revision
        var written = 0
        for (state, (_, records)) in states(of: manifest).enumerated() {
            for directory in Set(records.map(\.directory)) {
                for kind in FeedKind.allCases {
                    if let window, let current = read(tree, app: app, revision: revision, state: state, directory: directory, kind: kind),
                        let claims = try? FeedSignatureVerifier.unverifiedClaims(current),
                        TimeInterval(claims.exp) - now.timeIntervalSince1970 > window
                    {
                        continue
                    }
                    let signature = try signer.sign(
                        sha256: sha256(manifest, state: state, directory: directory, kind: kind),
                        claims: claims(manifest, state: state, directory: directory, kind: kind), now: now)
                    let url = tree.revisionFileURL(app, revision, relativePath(state: state, directory: directory, kind: kind))
                    try FileManager.default.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
                    try AtomicFile.write(Array(signature.utf8), to: url)
                    // The static copies of every variant these bytes serve now (a new file: the
                    // hard links still name the old one).
                    for record in records where state == 0 && record.directory == directory {
                        let copies = tree.appDirectory(app).appendingPathComponent(
                            FeedVariants.directory(key: "\(record.platform)/\(record.band)"), isDirectory: true)
                        guard FileManager.default.fileExists(atPath: copies.path) else { continue }
                        try AtomicFile.link(url, to: copies.appendingPathComponent(kind.rawValue + fileExtension))
                    }
                    written += 1
                }
            }
        }
        return written
    }
}

extension CatalogWorkflow {
    /// Re-issues, under the build lock, the signatures of every app's current revision that expire
    /// within `window` (all when nil): `catalog sign --refresh`, and `catalog serve` on a schedule.
    /// - Returns: how many signatures were written.
    public func refreshSignatures(at now: Date, window: TimeInterval?) throws -> Int {
        guard let signer else { throw CatalogError.io(path: publicDirectory.path, message: "no signing key to refresh signatures with") }
        let lock = try BuildLock(publicDirectory: publicDirectory)
        defer { withExtendedLifetime(lock) {} }
        let tree = PublicTree(root: publicDirectory)
        return try tree.publishedApps().reduce(0) {
            $0 + (try RevisionSignatures.refresh($1, in: tree, signer: signer, now: now, window: window))
        }
    }
}
