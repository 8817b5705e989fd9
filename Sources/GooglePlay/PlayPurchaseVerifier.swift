import Crypto
import FeedSigning
import Foundation
import Ledger
import _CryptoExtras

/// An app's Play licence key (Play Console, "Monetization setup"): base64 of an X.509
/// SubjectPublicKeyInfo holding an RSA key, as Play Console shows it. Keys under 2048 bits are
/// refused: Play's are 2048, and a shorter one would be a key someone else chose.
public struct PlayLicenseKey: Sendable {
    let key: _RSA.Signing.PublicKey

    /// The key in `base64` (whitespace around it ignored).
    public init(base64: String) throws(PlayConfigurationError) {
        let text = base64.trimmingCharacters(in: .whitespacesAndNewlines)
        guard let der = Data(base64Encoded: text) else {
            throw PlayConfigurationError("the licence key is not base64 (copy it whole from Play Console)")
        }
        do {
            key = try _RSA.Signing.PublicKey(derRepresentation: der)
        } catch {
            throw PlayConfigurationError(
                "the licence key is not an RSA SubjectPublicKeyInfo of at least 2048 bits (copy it from Play Console)")
        }
    }
}

/// A purchase as Google signed it (`Purchase.getOriginalJson()`), the fields the server reads. What
/// it proves is what Google signed at one moment; refunds, renewals, holds and the base plan come
/// only from the Play Developer API.
public struct PlayPurchase: Decodable, Sendable, Hashable {
    /// `purchaseState`: what Google had when it signed.
    public enum State: Sendable, Hashable {
        /// Paid.
        case purchased
        /// Paid by a slow method (cash, bank transfer): grants nothing until it completes.
        case pending
        /// A state this version does not know: grants nothing.
        case other(Int)
    }

    /// The app's package name.
    public var packageName: String?
    /// The product (a one-time product, or a subscription's product id).
    public var productId: String?
    /// The purchase's token: what the Play Developer API and the ledger know the purchase by.
    public var purchaseToken: String?
    /// Google's order id (`GPA.…`); none for a test purchase or a pending one.
    public var orderId: String?
    /// When it was bought, in milliseconds since 1970.
    public var purchaseTime: Int64?
    /// 0 purchased, 4 pending (Billing Library's `PurchaseState` wire values).
    public var purchaseState: Int?
    /// The app's account id for the buyer, when the app set one (`setObfuscatedAccountId`).
    public var obfuscatedAccountId: String?
    /// The app's profile id for the buyer, when the app set one.
    public var obfuscatedProfileId: String?
    /// How many were bought (one-time products).
    public var quantity: Int?
    /// Whether the purchase was acknowledged when Google signed it.
    public var acknowledged: Bool?
    /// Whether a subscription renews.
    public var autoRenewing: Bool?

    /// ``purchaseState`` read: absent is purchased, as in purchases Play signed before pending ones existed.
    public var state: State {
        switch purchaseState {
        case nil, 0?: .purchased
        case 4?: .pending
        case let other?: .other(other)
        }
    }
}

/// Verifies what an Android app holds of a purchase, offline (docs/google-play.md, "Verifying a
/// purchase"): RSASSA-PKCS1-v1_5 with SHA-1 over the exact bytes of `originalJson`, by the app's
/// licence key, then the JSON bound to the app's package. The bytes are never parsed and written
/// again before they are checked: the same object with other spacing is not what Google signed.
public struct PlayPurchaseVerifier: Sendable {
    /// The app's package name.
    public let packageName: String
    let key: PlayLicenseKey

    /// A verifier for `packageName` with its licence key.
    public init(packageName: String, key: PlayLicenseKey) {
        self.packageName = packageName
        self.key = key
    }

    /// `originalJson` is larger than this: refused before anything is checked.
    public static let maximumBytes = 16 * 1024

    /// The purchase in `originalJson`, once `signature` (base64, as Billing Library gives it) is
    /// found to be Google's over its exact bytes and it names this app. A pending purchase is
    /// returned, with ``PlayPurchase/state`` saying so: recorded, it grants nothing.
    public func verify(originalJson: [UInt8], signature: String) throws(PurchaseRefusal) -> PlayPurchase {
        guard originalJson.count <= Self.maximumBytes else {
            throw PurchaseRefusal(.malformed, "originalJson is \(originalJson.count) bytes, over the \(Self.maximumBytes)-byte limit")
        }
        guard let signatureBytes = Data(base64Encoded: signature.trimmingCharacters(in: .whitespacesAndNewlines)) else {
            throw PurchaseRefusal(.malformed, "the signature is not base64")
        }
        let digest = Insecure.SHA1.hash(data: originalJson)
        guard
            key.key.isValidSignature(
                _RSA.Signing.RSASignature(rawRepresentation: signatureBytes), for: digest, padding: .insecurePKCS1v1_5)
        else {
            throw PurchaseRefusal(.notAuthenticated, "the signature is not the app's licence key's over these exact bytes")
        }
        let purchase: PlayPurchase
        do {
            purchase = try JSONDecoder().decode(PlayPurchase.self, from: Data(originalJson))
        } catch {
            throw PurchaseRefusal(.malformed, "originalJson is not a purchase object")
        }
        guard purchase.packageName == packageName else {
            throw PurchaseRefusal(.wrongApp, "the purchase is of \(purchase.packageName ?? "no package"), not \(packageName)")
        }
        guard let token = purchase.purchaseToken, !token.isEmpty, purchase.productId?.isEmpty == false else {
            throw PurchaseRefusal(.malformed, "the purchase names no purchaseToken or productId")
        }
        return purchase
    }
}

/// A licence key or key set that cannot be used: the app's settings, not evidence, are wrong.
public struct PlayConfigurationError: Error, Sendable, Hashable, CustomStringConvertible {
    /// What is wrong, for the operator.
    public let description: String

    /// An error saying `description`.
    public init(_ description: String) { self.description = description }
}
