import AppStore
import AppStoreTestSupport
import FeedSigning
import Foundation
import Ledger
import Testing

/// App Store Server Notifications V2: the notification and each nested token verified, and the
/// nested tokens bound to the notification's app and environment.
@Suite struct NotificationVerificationTests {
    typealias PKI = AppStoreTestPKI
    static let app = SignedDataVerifierTests.app

    static func body(_ jws: String) -> String { "{\"signedPayload\":\"\(jws)\"}" }

    @Test func aNotificationAndItsNestedTokensAreVerified() async throws {
        let pki = try PKI.ecdsa()
        let verifier = SignedDataVerifier(trust: pki.trust, app: Self.app)
        let notification = try pki.jws(
            payload: PKI.notification(
                type: "DID_RENEW",
                data: [
                    "signedTransactionInfo": try pki.jws(payload: PKI.transaction()),
                    "signedRenewalInfo": try pki.jws(payload: PKI.renewalInfo()),
                ]))
        for form in [Self.body(notification), notification, "  " + Self.body(notification) + "\n"] {
            let verified = try await verifier.verifyAndDecodeNotification(form)
            #expect(verified.payload.notificationType == .didRenew)
            #expect(verified.transaction?.transactionId == "2000000000000001")
            #expect(verified.renewalInfo?.autoRenewStatus == .on)
        }
    }

    /// The nested payloads are kept as Apple signed them, not written again, and read back as the
    /// ledger's values of what was verified: a field the models do not know, and a fractional date,
    /// change nothing.
    @Test func theNestedPayloadsAreKeptAsSigned() async throws {
        let pki = try PKI.ecdsa()
        let verifier = SignedDataVerifier(trust: pki.trust, app: Self.app)
        let transaction = PKI.transaction(["appleAddsThisLater": ["nested": true], "purchaseDate": 1_735_603_200_000.5])
        let renewal = PKI.renewalInfo(["isInBillingRetryPeriod": true, "gracePeriodExpiresDate": 1_738_368_000_000])
        let (transactionJWS, renewalJWS) = (try pki.jws(payload: transaction), try pki.jws(payload: renewal))
        let verified = try await verifier.verifyAndDecodeNotification(
            try pki.jws(
                payload: PKI.notification(
                    type: "DID_FAIL_TO_RENEW", data: ["signedTransactionInfo": transactionJWS, "signedRenewalInfo": renewalJWS])))
        func signedPayload(_ jws: String) -> String? {
            Base64URL.decode(jws.split(separator: ".")[1]).map { String(decoding: $0, as: UTF8.self) }
        }
        #expect(verified.transactionJSON == signedPayload(transactionJWS))
        #expect(verified.renewalInfoJSON == signedPayload(renewalJWS))
        let submission = try #require(
            PurchaseSubmission.notification(verified, app: "com.example.app", body: "", receivedAt: .now, transferPolicy: .keep))
        let kept = try #require(submission.transactions.first)
        #expect(kept.json == verified.transactionJSON)
        #expect(LedgerJSON.decode(LedgerTransaction.self, kept.json) == kept.value)
        let state = try #require(submission.states.first)
        #expect(state.json == verified.renewalInfoJSON)
        #expect(LedgerJSON.decode(SubscriptionState.self, state.json) == state.value)
        #expect(state.value.isInBillingRetryPeriod == true)
    }

    @Test func aTestNotificationAndAnUnknownTypeAreRead() async throws {
        let pki = try PKI.ecdsa()
        let verifier = SignedDataVerifier(trust: pki.trust, app: Self.app)
        let test = try await verifier.verifyAndDecodeNotification(try pki.jws(payload: PKI.notification(type: "TEST")))
        #expect(test.payload.notificationType == .test)
        #expect(test.transaction == nil)
        let unknown = try await verifier.verifyAndDecodeNotification(
            try pki.jws(payload: PKI.notification(type: "SOMETHING_APPLE_ADDS", subtype: "LATER")))
        #expect(unknown.payload.notificationType?.rawValue == "SOMETHING_APPLE_ADDS")
        #expect(unknown.payload.subtype?.rawValue == "LATER")
    }

    @Test func aNestedTransactionOfAnotherAppIsRefusedThoughGenuine() async throws {
        let pki = try PKI.ecdsa()
        // An app that reads any bundle (a support tool) still binds nested tokens to their notification.
        for settings in [Self.app, AppStoreApp()] {
            let verifier = SignedDataVerifier(trust: pki.trust, app: settings)
            let notification = try pki.jws(
                payload: PKI.notification(data: [
                    "signedTransactionInfo": try pki.jws(payload: PKI.transaction(["bundleId": "com.other.app"]))
                ]))
            let refusal = await SignedDataVerifierTests.refusal { _ = try await verifier.verifyAndDecodeNotification(notification) }
            #expect(refusal?.code == .wrongApp)
        }
    }

    @Test func nestedTokensFromAnotherEnvironmentAreRefused() async throws {
        let pki = try PKI.ecdsa()
        let verifier = SignedDataVerifier(trust: pki.trust, app: Self.app)
        let sandboxTransaction = try pki.jws(
            payload: PKI.notification(data: ["signedTransactionInfo": try pki.jws(payload: PKI.transaction(["environment": "Sandbox"]))]))
        let sandboxRenewal = try pki.jws(
            payload: PKI.notification(data: ["signedRenewalInfo": try pki.jws(payload: PKI.renewalInfo(["environment": "Sandbox"]))]))
        for notification in [sandboxTransaction, sandboxRenewal] {
            let refusal = await SignedDataVerifierTests.refusal { _ = try await verifier.verifyAndDecodeNotification(notification) }
            #expect(refusal?.code == .wrongApp)
        }
    }

    @Test func aNestedRenewalInfoOfAnotherSubscriptionIsRefused() async throws {
        let pki = try PKI.ecdsa()
        let verifier = SignedDataVerifier(trust: pki.trust, app: Self.app)
        let notification = try pki.jws(
            payload: PKI.notification(data: [
                "signedTransactionInfo": try pki.jws(payload: PKI.transaction()),
                "signedRenewalInfo": try pki.jws(payload: PKI.renewalInfo(["originalTransactionId": "9999"])),
            ]))
        let refusal = await SignedDataVerifierTests.refusal { _ = try await verifier.verifyAndDecodeNotification(notification) }
        #expect(refusal?.code == .wrongApp)
    }

    @Test func aForgedNestedTokenInAGenuineNotificationIsRefused() async throws {
        let pki = try PKI.ecdsa()
        let impostor = try PKI.ecdsa()
        let verifier = SignedDataVerifier(trust: pki.trust, app: Self.app)
        let notification = try pki.jws(
            payload: PKI.notification(data: ["signedTransactionInfo": try impostor.jws(payload: PKI.transaction())]))
        let refusal = await SignedDataVerifierTests.refusal { _ = try await verifier.verifyAndDecodeNotification(notification) }
        #expect(refusal?.code == .notAuthenticated)
        #expect(refusal?.reason.hasPrefix("data.signedTransactionInfo") == true)
    }

    @Test func aNotificationOfAnotherAppIsRefused() async throws {
        let pki = try PKI.ecdsa()
        let verifier = SignedDataVerifier(trust: pki.trust, app: Self.app)
        for data: [String: any Sendable] in [["bundleId": "com.other.app"], ["appAppleId": 42]] {
            let refusal = await SignedDataVerifierTests.refusal {
                _ = try await verifier.verifyAndDecodeNotification(try pki.jws(payload: PKI.notification(type: "TEST", data: data)))
            }
            #expect(refusal?.code == .wrongApp)
        }
    }

    @Test func aBodyThatIsNotANotificationIsMalformed() async throws {
        let verifier = SignedDataVerifier(trust: try PKI.ecdsa().trust, app: Self.app)
        for body in ["{}", "{\"signedPayload\": 3}", "{not json"] {
            let refusal = await SignedDataVerifierTests.refusal { _ = try await verifier.verifyAndDecodeNotification(body) }
            #expect(refusal?.code == .malformed)
        }
    }
}

extension NotificationVerificationTests {
    @Test func aNestedAppTransactionIsVerifiedAndBound() async throws {
        let pki = try PKI.ecdsa()
        let verifier = SignedDataVerifier(trust: pki.trust, app: Self.app)
        func notification(_ appTransaction: [String: any Sendable]) throws -> String {
            try pki.jws(
                payload: PKI.notification(
                    type: "RESCIND_CONSENT",
                    [
                        "data": NSNull(),
                        "appData": [
                            "environment": "Production", "bundleId": "com.example.app", "appAppleId": 1_234_567_890,
                            "signedAppTransactionInfo": try pki.jws(payload: appTransaction),
                        ] as [String: any Sendable],
                    ]))
        }
        let verified = try await verifier.verifyAndDecodeNotification(try notification(PKI.appTransaction()))
        #expect(verified.appTransaction?.appTransactionId == "704289572")
        let sandbox = await SignedDataVerifierTests.refusal {
            _ = try await verifier.verifyAndDecodeNotification(try notification(PKI.appTransaction(["receiptType": "Sandbox"])))
        }
        #expect(sandbox?.code == .wrongApp)
    }
}
