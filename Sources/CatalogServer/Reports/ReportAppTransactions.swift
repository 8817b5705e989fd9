import AppStore
import Foundation
import Ledger
import Synchronization
import X509

/// What a verified AppTransaction says, as far as reports care: the bundle it was issued to, the
/// store environment, and the id that counts one install.
public struct VerifiedAppTransaction: Sendable, Hashable {
    /// The app's bundle identifier, as signed by the App Store (equal to the one expected).
    public var bundleID: String
    /// The store environment, lower-cased as reports name it: "production", "sandbox" or "xcode".
    public var environment: String
    /// The id that counts one install: `appTransactionId`, or `originalTransactionId` where the former is absent.
    public var installKey: String

    /// Makes a value by hand, e.g. for tests or for callers that stub the verifier.
    public init(bundleID: String, environment: String, installKey: String) {
        self.bundleID = bundleID
        self.environment = environment
        self.installKey = installKey
    }
}

/// The AppTransactions reports may carry, verified by Purchases' `SignedDataVerifier`: the one App
/// Store verifier of the project (docs/purchases.md), with report intake's own bound before it and
/// its own checks after it.
///
/// Report bodies are small, so a JWS over ``maximumJWSBytes`` is refused before any parsing. After
/// the App Store's signature and the app's claims are verified, two checks are the report path's
/// own: the payload must be an AppTransaction (no `transactionId` or `productId`: the same App Store
/// leaf signs purchase transactions, and an app holds one per purchase, each of which would otherwise
/// count as another install), and it must carry an install key.
///
/// One `SignedDataVerifier` is kept per app, so that each keeps its cache of verified chains; it is
/// made again when the app's settings change.
public final class ReportAppTransactions: Sendable {
    /// A JWS longer than this is refused before parsing. Real AppTransactions are about 4 KiB (three
    /// base64 certificates dominate), so 16 KiB leaves room without letting a client make us parse more.
    public static let maximumJWSBytes = 16 * 1024

    /// The roots AppTransactions must chain to: Apple's pinned ones and `--root-certificate`'s.
    public let trust: PurchaseTrust
    private let verifiers = Mutex<[String: SignedDataVerifier]>([:])

    /// Trusts `roots` for AppTransactions; throws when there are none, since a verifier that trusts
    /// nothing is a misconfiguration.
    public init(roots: [Certificate]) throws(PurchaseConfigurationError) {
        guard !roots.isEmpty else { throw PurchaseConfigurationError("no root certificates given for AppTransactions") }
        trust = PurchaseTrust(jwsRoots: roots, receiptRoots: [])
    }

    /// Loads PEM or DER root certificate files; a PEM file may hold several certificates.
    public convenience init(rootCertificateFiles: [String]) throws(PurchaseConfigurationError) {
        try self.init(roots: try PurchaseTrust.certificates(fromFiles: rootCertificateFiles))
    }

    /// What an AppTransaction of `bundleID` is bound to: the app's purchase settings when it has
    /// them (its Apple id, environments and Xcode certificate), else its bundle id alone. An Apple id
    /// is checked only when the settings name one: a report is feedback, not a purchase, and an app
    /// without purchase settings has no Apple id to check against.
    public static func app(bundleID: String, settings: AppStoreApp?) -> AppStoreApp {
        AppStoreApp(
            bundleId: bundleID, appAppleId: settings?.appAppleId, environments: settings?.environments ?? [.production, .sandbox],
            xcodeCertificate: settings?.xcodeCertificate, refusesAppAppleIdWhenUnset: false)
    }

    /// Verifies `jws` as an AppTransaction of `app` (see ``app(bundleID:settings:)``). Never traps on
    /// input: every failure is a `.failure` with Purchases' refusal code and reason.
    public func verify(_ jws: String, app: AppStoreApp) async -> Result<VerifiedAppTransaction, PurchaseRefusal> {
        do {
            return .success(try await verifyThrowing(jws, app: app))
        } catch {
            return .failure(error)
        }
    }

    private func verifyThrowing(_ jws: String, app: AppStoreApp) async throws(PurchaseRefusal) -> VerifiedAppTransaction {
        // Bound first, before splitting or decoding, so that hostile sizes cost nothing.
        let length = jws.utf8.count
        guard length <= Self.maximumJWSBytes else {
            throw PurchaseRefusal(.malformed, "the AppTransaction is \(length) bytes, over the \(Self.maximumJWSBytes)-byte limit")
        }
        let verified = try await verifier(for: app).verifyAndDecodeAppTransaction(jws)
        // Fields the model leaves out, read from the payload whose signature was just verified.
        let extra = try SignedDataVerifier.unverifiedPayload(of: jws, as: ReportOnlyFields.self)
        if extra.transactionId != nil || extra.productId != nil {
            throw PurchaseRefusal(
                .malformed, "the payload has transactionId or productId: a signed purchase transaction, not an AppTransaction")
        }
        // appTransactionId is the per-account, per-app id (iOS 18.4+); older AppTransactions carry
        // originalTransactionId only. Empty counts as absent, so that "" is never everyone's install.
        guard let installKey = [verified.appTransactionId, extra.originalTransactionId].compactMap({ $0 }).first(where: { !$0.isEmpty })
        else {
            throw PurchaseRefusal(.malformed, "the AppTransaction has neither appTransactionId nor originalTransactionId")
        }
        // The verifier has checked both: the bundle equals the app's, the environment is one it accepts.
        return VerifiedAppTransaction(
            bundleID: verified.bundleId ?? "", environment: verified.receiptType?.rawValue.lowercased() ?? "", installKey: installKey)
    }

    /// The app's verifier, made again when its settings changed.
    private func verifier(for app: AppStoreApp) -> SignedDataVerifier {
        let key = app.bundleId ?? ""
        return verifiers.withLock { verifiers in
            if let existing = verifiers[key], existing.app == app { return existing }
            let made = SignedDataVerifier(trust: trust, app: app)
            verifiers[key] = made
            return made
        }
    }
}

/// What report intake reads beyond Purchases' AppTransaction. `transactionId` and `productId` are
/// read only to refuse a purchase transaction, so any JSON value but null counts as present.
private struct ReportOnlyFields: Decodable {
    var transactionId: AnyJSONValue?
    var productId: AnyJSONValue?
    var originalTransactionId: String?
}

/// Any JSON value but null, read only to learn that a field is there.
private struct AnyJSONValue: Decodable {
    init(from decoder: any Decoder) throws {}
}
