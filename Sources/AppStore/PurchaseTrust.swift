import Foundation
import Ledger
import SwiftASN1
import X509

/// The roots a verifier trusts: Apple's two, pinned, plus any an operator adds.
///
/// JWS chains end at `jwsRoots` (Apple Root CA - G3), receipts at `receiptRoots` (Apple Inc. Root).
/// Tests make their own CA and pass it as both.
public struct PurchaseTrust: Sendable {
    /// Anchors for StoreKit 2 JWS and notifications.
    public var jwsRoots: [Certificate]
    /// Anchors for legacy app receipts.
    public var receiptRoots: [Certificate]

    /// Makes a trust set from explicit roots.
    public init(jwsRoots: [Certificate], receiptRoots: [Certificate]) {
        self.jwsRoots = jwsRoots
        self.receiptRoots = receiptRoots
    }

    /// Apple's two roots, each checked against its SHA-256 pin.
    public static func apple() throws(PurchaseConfigurationError) -> PurchaseTrust {
        PurchaseTrust(
            jwsRoots: [try AppleRootCertificates.rootCAG3.certificate()],
            receiptRoots: [try AppleRootCertificates.appleIncRoot.certificate()])
    }

    /// This set with `roots` trusted for JWS and receipts as well (an operator's own CA, a test CA).
    public func adding(_ roots: [Certificate]) -> PurchaseTrust {
        PurchaseTrust(jwsRoots: jwsRoots + roots, receiptRoots: receiptRoots + roots)
    }

    /// Reads certificates from PEM or DER files; a PEM file may hold several. The content decides the
    /// format, not the extension, since Apple publishes `.cer` as DER and people convert them to PEM.
    public static func certificates(fromFiles paths: [String]) throws(PurchaseConfigurationError) -> [Certificate] {
        var certificates: [Certificate] = []
        for path in paths {
            let bytes: [UInt8]
            do {
                bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: path)))
            } catch {
                throw PurchaseConfigurationError("cannot read certificate file \(path): \(error.localizedDescription)")
            }
            certificates += try Self.certificates(fromBytes: bytes, named: path)
        }
        return certificates
    }

    /// Reads certificates from the bytes of a PEM or DER file (`name` says which, in an error): a
    /// certificate that travelled as bytes, such as an app's Xcode certificate in a published record.
    public static func certificates(fromBytes bytes: [UInt8], named name: String) throws(PurchaseConfigurationError) -> [Certificate] {
        do {
            if let text = String(bytes: bytes, encoding: .utf8), text.contains("-----BEGIN CERTIFICATE-----") {
                let documents = try PEMDocument.parseMultiple(pemString: text).filter { $0.discriminator == "CERTIFICATE" }
                return try documents.map { try Certificate(derEncoded: $0.derBytes) }
            }
            return [try Certificate(derEncoded: bytes)]
        } catch {
            throw PurchaseConfigurationError("\(name) is not a PEM or DER X.509 certificate: \(error)")
        }
    }
}
