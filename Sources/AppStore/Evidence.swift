import FeedSigning
import Foundation
import Ledger

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
        // Two dots and no third, found without splitting: a receipt of hundreds of KiB has dots too.
        let dot = UInt8(ascii: ".")
        guard let first = text.firstIndex(of: dot), let second = text[(first + 1)...].firstIndex(of: dot),
            !text[(second + 1)...].contains(dot), let payload = Base64URL.decode(bytes: text[(first + 1)..<second]),
            payload.first == UInt8(ascii: "{")
        else {
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

/// What evidence names, whatever its kind: the fields a support tool prints.
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
    /// A receipt's in-app entries, every one in the receipt's order; nil for the other kinds.
    public var inApp: [AppReceipt.InAppPurchase]?

    /// What `bytes` claim, decoded as `kind` without checking anything: no signature, no chain, no
    /// claim. For a support tool to show, beside a refusal, which app and transaction a refused piece
    /// of evidence names; never a reason to believe it. Nil when it does not decode.
    public static func unverified(_ bytes: [UInt8], kind: EvidenceKind) -> EvidenceSummary? {
        let text = String(decoding: trimmingASCIIWhitespace(bytes), as: UTF8.self)
        func payload<T: Decodable>(_ jws: String, as type: T.Type) -> T? {
            try? CompactJWS(jws).decodePayload(T.self)
        }
        switch kind {
        case .transaction: return payload(text, as: JWSTransactionDecodedPayload.self).map(EvidenceSummary.init)
        case .renewalInfo: return payload(text, as: JWSRenewalInfoDecodedPayload.self).map(EvidenceSummary.init)
        case .appTransaction: return payload(text, as: AppTransaction.self).map(EvidenceSummary.init)
        case .notification:
            guard let jws = try? SignedDataVerifier.signedPayload(of: text),
                let notification = payload(jws, as: ResponseBodyV2DecodedPayload.self)
            else { return nil }
            return EvidenceSummary(
                notification: notification,
                transaction: notification.data?.signedTransactionInfo.flatMap { payload($0, as: JWSTransactionDecodedPayload.self) },
                renewalInfo: notification.data?.signedRenewalInfo.flatMap { payload($0, as: JWSRenewalInfoDecodedPayload.self) })
        case .receipt:
            return (try? ReceiptPayload.unverified(bytes)).map(EvidenceSummary.init)
        }
    }
}

// One mapping per kind, for evidence verified and evidence merely decoded alike.
extension EvidenceSummary {
    init(_ t: JWSTransactionDecodedPayload) {
        self.init(
            kind: .transaction, environment: t.environment, bundleId: t.bundleId, productId: t.productId, transactionId: t.transactionId,
            originalTransactionId: t.originalTransactionId, signedDate: t.signedDate)
    }

    init(_ r: JWSRenewalInfoDecodedPayload) {
        self.init(
            kind: .renewalInfo, environment: r.environment, productId: r.productId, originalTransactionId: r.originalTransactionId,
            signedDate: r.signedDate)
    }

    init(_ a: AppTransaction) {
        self.init(
            kind: .appTransaction, environment: a.receiptType, bundleId: a.bundleId, appAppleId: a.appAppleId,
            transactionId: a.appTransactionId, signedDate: a.receiptCreationDate)
    }

    init(
        notification n: ResponseBodyV2DecodedPayload, transaction: JWSTransactionDecodedPayload?, renewalInfo: JWSRenewalInfoDecodedPayload?
    ) {
        let named = n.app
        self.init(
            kind: .notification, environment: named.environment, bundleId: named.bundleId, appAppleId: named.appAppleId,
            productId: transaction?.productId ?? renewalInfo?.productId ?? n.summary?.productId, transactionId: transaction?.transactionId,
            originalTransactionId: transaction?.originalTransactionId ?? renewalInfo?.originalTransactionId, signedDate: n.signedDate,
            notificationType: n.notificationType, subtype: n.subtype)
    }

    init(_ r: AppReceipt) {
        let latest = r.inApp.max { ($0.purchaseDate ?? .distantPast) < ($1.purchaseDate ?? .distantPast) }
        self.init(
            kind: .receipt, environment: r.environment, bundleId: r.bundleId, appAppleId: r.appItemId, productId: latest?.productId,
            transactionId: latest?.transactionId, originalTransactionId: latest?.originalTransactionId, signedDate: r.receiptCreationDate,
            inApp: r.inApp)
    }
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
        var text: String { String(decoding: trimmingASCIIWhitespace(bytes), as: UTF8.self) }
        switch kind {
        case .transaction: return EvidenceSummary(try await verifyAndDecodeTransaction(text))
        case .renewalInfo: return EvidenceSummary(try await verifyAndDecodeRenewalInfo(text))
        case .appTransaction: return EvidenceSummary(try await verifyAndDecodeAppTransaction(text))
        case .notification:
            let n = try await verifyAndDecodeNotification(text)
            return EvidenceSummary(notification: n.payload, transaction: n.transaction, renewalInfo: n.renewalInfo)
        case .receipt: return EvidenceSummary(try await verifyAndDecodeReceipt(bytes, deviceIdentifier: deviceIdentifier))
        }
    }
}
