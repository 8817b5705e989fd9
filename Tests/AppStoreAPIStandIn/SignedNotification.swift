import AppStoreTestSupport
import Foundation

/// One notification as Apple signed it, the customer it concerns, and when Apple first sent it:
/// what the stand-in's history holds and what a notification URL receives.
public struct SignedNotification: Sendable {
    public typealias PKI = AppStoreTestPKI
    /// The body Apple posts: `{"signedPayload": …}`.
    public var body: String
    public var signedPayload: String
    /// The subscription's original transaction id.
    public var original: String
    public var firstSent: Date

    public init(body: String, signedPayload: String, original: String, firstSent: Date) {
        self.body = body
        self.signedPayload = signedPayload
        self.original = original
        self.firstSent = firstSent
    }

    /// `customers` subscriptions of `com.example.app.pro.monthly`, each bought, renewed and then
    /// refunded or expired: three notifications each, first sent a minute apart over the last day.
    public static func subscriptions(_ pki: PKI, customers: Int, now: Date = Date()) throws -> [SignedNotification] {
        var signed: [SignedNotification] = []
        let product = "com.example.app.pro.monthly"
        let start = PKI.date(2024, 12, 1)
        for customer in 0..<customers {
            let original = String(2_000_000_100_000 + customer * 10)
            let month: TimeInterval = 30 * 86_400
            let steps: [(type: String, subtype: String?, index: Int, revoked: Bool)] = [
                ("SUBSCRIBED", "INITIAL_BUY", 0, false), ("DID_RENEW", nil, 1, false),
                customer % 2 == 0 ? ("REFUND", nil, 1, true) : ("EXPIRED", "VOLUNTARY", 1, false),
            ]
            for step in steps {
                var transaction: [String: any Sendable] = [
                    "transactionId": String(Int(original)! + step.index), "originalTransactionId": original, "productId": product,
                    "purchaseDate": PKI.milliseconds(start.addingTimeInterval(Double(step.index) * month)),
                    "expiresDate": PKI.milliseconds(start.addingTimeInterval(Double(step.index + 1) * month)),
                ]
                if step.revoked {
                    transaction["revocationDate"] = PKI.milliseconds(start.addingTimeInterval(month + 86_400))
                    transaction["revocationReason"] = 0
                }
                let renewal: [String: any Sendable] = [
                    "originalTransactionId": original, "autoRenewStatus": step.type == "EXPIRED" ? 0 : 1,
                ]
                let payload = PKI.notification(
                    type: step.type, subtype: step.subtype,
                    data: [
                        "signedTransactionInfo": try pki.jws(payload: PKI.transaction(transaction)),
                        "signedRenewalInfo": try pki.jws(payload: PKI.renewalInfo(renewal)),
                    ])
                let jws = try pki.jws(payload: payload)
                signed.append(
                    SignedNotification(
                        body: #"{"signedPayload":"\#(jws)"}"#, signedPayload: jws, original: original,
                        firstSent: now.addingTimeInterval(-86_400 + Double(signed.count) * 60)))
            }
        }
        return signed
    }
}
