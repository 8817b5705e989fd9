import ArgumentParser
import CatalogKit
import FeedSigning
import Foundation

/// The signing key of the commands that publish, from `--signing-key` or `CATALOG_SIGNING_KEY`.
struct SigningOptions: ParsableArguments {
    @Option(
        help: ArgumentHelp(
            "A signing key file from 'catalog keys create' or 'catalog keys rotate': every feed published is signed (a .jws beside it). Default: CATALOG_SIGNING_KEY, else unsigned.",
            valueName: "file"))
    var signingKey: String?

    @Option(
        help: ArgumentHelp(
            "How long each signature is trusted (7d, 36h, …); never past the key's certificate. Default: 7d.", valueName: "interval"))
    var signatureLifetime: Interval?

    /// The signer, or nil when no key is configured.
    func signer() throws -> FeedSigner? {
        guard let path = signingKey ?? ProcessInfo.processInfo.environment["CATALOG_SIGNING_KEY"], !path.isEmpty else { return nil }
        return try Self.signer(keyFile: path, lifetime: signatureLifetime)
    }

    static func signer(keyFile path: String, lifetime: Interval?) throws -> FeedSigner {
        guard let data = FileManager.default.contents(atPath: path) else { throw ValidationError("cannot read the signing key \(path)") }
        do {
            return try FeedSigner(
                key: Ed25519PrivateKey(jwk: data), lifetime: lifetime.map { TimeInterval($0.seconds) } ?? FeedSigner.defaultLifetime)
        } catch {
            throw ValidationError("signing key \(path): \(error.message)")
        }
    }

    /// The root public keys (`root.pub.jwk` files) that `catalog verify` and `catalog fetch` trust.
    static func rootKeys(_ paths: [String]) throws -> [Ed25519PublicKey] {
        try paths.map { path in
            guard let data = FileManager.default.contents(atPath: path) else { throw ValidationError("cannot read \(path)") }
            do { return try Ed25519PublicKey(jwk: data) } catch { throw ValidationError("\(path): \(error)") }
        }
    }

    /// `options.workflow` with the signer applied.
    func workflow(_ options: CatalogOptions) throws -> CatalogWorkflow {
        var workflow = options.workflow
        workflow.signer = try signer()
        return workflow
    }
}
