import ArgumentParser
import CatalogKit
import FeedSigning
import Foundation

/// The signing key of the commands that publish (`--signing-key`, `--signature-lifetime`), read
/// as ``Settings`` says: flag, `CATALOG_SIGNING_KEY`, the `--config` file, default.
struct SigningOptions: ParsableArguments {
    @Option(
        name: Setting.signingKey.long,
        help: ArgumentHelp(
            "A signing key file from 'catalog keys create' or 'catalog keys rotate': every feed published is signed (a .jws beside it). A secret: keep the file 0600. Default: none, unsigned.",
            valueName: "file"))
    var signingKey: String?

    @Option(
        name: Setting.signatureLifetime.long,
        help: ArgumentHelp(
            "How long each signature is trusted (7d, 36h, …); re-issued when half has run; never past the key's certificate. Default: 7d.",
            valueName: "interval"))
    var signatureLifetime: Interval?

    /// The signer, or nil when no key is configured. Both settings are read whether or not
    /// there is a key, so that `--print-config` shows both.
    func signer(_ settings: Settings) throws -> FeedSigner? {
        let lifetime = try settings.value(.signatureLifetime, flag: signatureLifetime, default: nil as Interval?)
        guard let path = try settings.value(.signingKey, flag: signingKey, default: nil as String?), !path.isEmpty else { return nil }
        return try Self.signer(keyFile: path, lifetime: lifetime)
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
}
