import FeedSigning
import Foundation

/// What a piece of evidence is, told from its shape before anything in it is believed.
public enum EvidenceKind: String, Sendable, Hashable, Codable {
    /// A signed transaction.
    case transaction
    /// A subscription's signed renewal info.
    case renewalInfo
    /// A signed AppTransaction.
    case appTransaction
    /// An App Store Server Notification V2 (a body, or its bare JWS).
    case notification
    /// A legacy app receipt (PKCS#7, raw or base64).
    case receipt

    /// Guesses the kind from the bytes: a notification body is JSON, a JWS is three base64url parts
    /// whose payload's fields tell which kind of token it is, anything else is taken for a receipt.
    /// The guess only picks the check to run; every check then holds the evidence to its kind's rules.
    public static func of(_ bytes: [UInt8]) -> EvidenceKind {
        let text = trimmingASCIIWhitespace(bytes)
        if text.first == UInt8(ascii: "{") { return .notification }
        let parts = text.split(separator: UInt8(ascii: "."), omittingEmptySubsequences: false)
        guard parts.count == 3, let payload = Base64URL.decode(bytes: parts[1]), payload.first == UInt8(ascii: "{") else {
            return .receipt
        }
        // A key's presence tells the kind; a byte search is enough, since it only picks the check.
        func has(_ key: String) -> Bool {
            let needle = Array("\"\(key)\"".utf8)
            return payload.count >= needle.count
                && (0...(payload.count - needle.count)).contains { payload[$0..<$0 + needle.count].elementsEqual(needle) }
        }
        if has("notificationType") { return .notification }
        if has("transactionId") { return .transaction }
        if has("receiptType") || has("receiptCreationDate") { return .appTransaction }
        if has("autoRenewStatus") || has("autoRenewProductId") || has("renewalDate") { return .renewalInfo }
        return .transaction
    }
}

/// What verified evidence names, whatever its kind: the fields a support tool prints.
public struct EvidenceSummary: Sendable, Hashable {
    /// The kind verified.
    public var kind: EvidenceKind
    /// The environment.
    public var environment: AppStoreEnvironment?
    /// The bundle identifier (a renewal info names none).
    public var bundleId: String?
    /// The app's Apple id, where the evidence names one (notifications, AppTransactions, receipts).
    public var appAppleId: Int64?
    /// The product (a notification's from its nested transaction or renewal info).
    public var productId: String?
    /// The transaction (a receipt's: its latest in-app entry's).
    public var transactionId: String?
    /// The original transaction.
    public var originalTransactionId: String?
    /// When it was signed (a receipt's creation date).
    public var signedDate: Date?
    /// A notification's type.
    public var notificationType: NotificationTypeV2?
    /// A notification's subtype.
    public var subtype: Subtype?
}

extension SignedDataVerifier {
    /// Verifies evidence of any kind (told by `EvidenceKind.of`), and summarises what it names.
    public func verifyAny(_ bytes: [UInt8], deviceIdentifier: [UInt8]? = nil) async -> (
        EvidenceKind, Result<EvidenceSummary, PurchaseRefusal>
    ) {
        let kind = EvidenceKind.of(bytes)
        do {
            return (kind, .success(try await summary(of: bytes, kind: kind, deviceIdentifier: deviceIdentifier)))
        } catch {
            return (kind, .failure(error))
        }
    }

    private func summary(of bytes: [UInt8], kind: EvidenceKind, deviceIdentifier: [UInt8]?) async throws(PurchaseRefusal) -> EvidenceSummary
    {
        let text = String(decoding: trimmingASCIIWhitespace(bytes), as: UTF8.self)
        switch kind {
        case .transaction:
            let t = try await verifyAndDecodeTransaction(text)
            return EvidenceSummary(
                kind: kind, environment: t.environment, bundleId: t.bundleId, productId: t.productId, transactionId: t.transactionId,
                originalTransactionId: t.originalTransactionId, signedDate: t.signedDate)
        case .renewalInfo:
            let r = try await verifyAndDecodeRenewalInfo(text)
            return EvidenceSummary(
                kind: kind, environment: r.environment, productId: r.productId, originalTransactionId: r.originalTransactionId,
                signedDate: r.signedDate)
        case .appTransaction:
            let a = try await verifyAndDecodeAppTransaction(text)
            return EvidenceSummary(
                kind: kind, environment: a.receiptType, bundleId: a.bundleId, appAppleId: a.appAppleId, transactionId: a.appTransactionId,
                signedDate: a.receiptCreationDate)
        case .notification:
            let n = try await verifyAndDecodeNotification(text)
            let named = n.payload.app
            return EvidenceSummary(
                kind: kind, environment: named.environment, bundleId: named.bundleId, appAppleId: named.appAppleId,
                productId: n.transaction?.productId ?? n.renewalInfo?.productId ?? n.payload.summary?.productId,
                transactionId: n.transaction?.transactionId,
                originalTransactionId: n.transaction?.originalTransactionId ?? n.renewalInfo?.originalTransactionId,
                signedDate: n.payload.signedDate, notificationType: n.payload.notificationType, subtype: n.payload.subtype)
        case .receipt:
            let r = try await verifyAndDecodeReceipt(bytes, deviceIdentifier: deviceIdentifier)
            let latest = r.inApp.max { ($0.purchaseDate ?? .distantPast) < ($1.purchaseDate ?? .distantPast) }
            return EvidenceSummary(
                kind: kind, environment: r.environment, bundleId: r.bundleId, appAppleId: r.appItemId, productId: latest?.productId,
                transactionId: latest?.transactionId, originalTransactionId: latest?.originalTransactionId,
                signedDate: r.receiptCreationDate)
        }
    }
}
