import AppStore
import CatalogKit
import Foundation
import GooglePlay
import HTTPTypes
import Hummingbird
import Ledger
import NIOCore
import PlayDeveloperAPI

/// Google Play on the purchase endpoints (docs/google-play.md, "The endpoints"): what an Android app
/// presents, and what Pub/Sub pushes. Both verify what Google signed before anything is kept, queue
/// what Google must be told within three days, and record what the Play Developer API says.
struct GooglePlayEndpoints: Sendable {
    /// Where acknowledgements wait; any node may queue one.
    let acknowledgements: any StoreAcknowledgementStore
    /// The Play Developer API's clients; nil on a serving replica, which only queues.
    let clients: PlayAPIClients?
    /// Google's keys for push tokens; nil: no push is accepted (`--google-push-keys`).
    let pushKeys: GooglePushKeys?

    /// A Pub/Sub push: a small envelope.
    static let maximumPushBytes = 64 * 1024
}

extension PurchaseEndpoints {
    /// The Play settings of `app` at `revision`, or the answer when there are none to use.
    private func playApp(_ app: String, revision: Int, need: String) async -> Result<PlayApp, EndpointRefusal> {
        switch await settings.play(app, revision: revision) {
        case .failure(let error): return .failure(EndpointRefusal(response: JSONError.response(.serviceUnavailable, "\(error)")))
        case .success(nil):
            return .failure(EndpointRefusal(response: JSONError.response(.conflict, "\(app) takes no Google Play evidence: set \(need)")))
        case .success(let play?): return .success(play)
        }
    }

    /// Google Play evidence (`originalJson` and `signature`, as Play Billing gives them) verified
    /// offline as `app`'s at `revision` (docs/google-play.md, "Verifying a purchase"), of a Play
    /// product the catalog sells; its claimant is the app account Google signed
    /// (`obfuscatedAccountId`), else the one sent beside it, else the purchase itself. 409 when the
    /// app has no licence key; refusals are counted under `endpoint`.
    func verifyPlay(_ evidence: PresentedEvidence, app: String, revision: Int, endpoint: String) async
        -> Result<VerifiedEvidence, EndpointRefusal>
    {
        func answer(_ response: Response) -> Result<VerifiedEvidence, EndpointRefusal> { .failure(EndpointRefusal(response: response)) }
        guard googlePlay != nil else { return answer(JSONError.response(.serviceUnavailable, "this server takes no Google Play evidence")) }
        guard let json = evidence.originalJson, let signature = evidence.signature, evidence.signedTransaction == nil,
            evidence.receipt == nil
        else {
            return answer(
                JSONError.response(.badRequest, "send Google Play's originalJson with its signature, and no signedTransaction or receipt"))
        }
        if let token = evidence.appAccountToken, UUID(uuidString: token) == nil {
            return answer(JSONError.response(.badRequest, "appAccountToken must be a UUID"))
        }
        let play: PlayApp
        switch await playApp(app, revision: revision, need: "playPackageName and playLicenseKey") {
        case .failure(let refusal): return .failure(refusal)
        case .success(let found): play = found
        }
        guard let verifier = play.verifier else {
            return answer(JSONError.response(.conflict, "\(app) names no playLicenseKey: its purchases cannot be verified"))
        }
        let purchase: PlayPurchase
        do {
            purchase = try verifier.verify(originalJson: Array(json.utf8), signature: signature)
        } catch {
            return answer(refuse(error, endpoint: endpoint))
        }
        guard let token = purchase.purchaseToken, !token.isEmpty, let product = purchase.productId else {
            return answer(refuse(PurchaseRefusal(.malformed, "the purchase names no token or product"), endpoint: endpoint))
        }
        guard play.catalog.knows(product) else {
            return answer(
                refuse(
                    PurchaseRefusal(.unknownProduct, "the catalog of '\(app)' sells no Play product '\(product.prefix(64))'"),
                    endpoint: endpoint))
        }
        // The rule every store's evidence names its customer by, over what Google signed.
        let signed = LedgerTransaction(
            marketplace: .googlePlay, transactionId: purchase.orderId, purchaseKey: token, productId: product, purchaseDate: nil,
            kind: nil, appAccount: purchase.obfuscatedAccountId, signedDate: nil, environment: nil)
        guard let claimant = CustomerKey.of(signed, appAccount: evidence.appAccountToken) else {
            return answer(refuse(PurchaseRefusal(.malformed, "the purchase names no token"), endpoint: endpoint))
        }
        return .success(
            VerifiedEvidence(
                transactions: [], appAccountToken: evidence.appAccountToken, claimant: claimant,
                googlePlay: VerifiedPlayPurchase(purchase: purchase, token: token, productId: product, app: play)))
    }

    /// What to record of a verified Play purchase, or why it is only queued.
    enum PlaySubmission {
        /// Google's answer, to record.
        case record(PurchaseSubmission)
        /// Google was not asked, or has nothing paid to say, now: the outbox asks again.
        case queued(String)
    }

    /// What Google says of a verified Play purchase now: its acknowledgement queued first, durably
    /// (from here nothing that happens loses it), then, on the editor node, Google asked with one
    /// retry at most (the app is waiting), its answer to be recorded for the purchase's app account.
    func playSubmission(_ verified: VerifiedEvidence, _ play: VerifiedPlayPurchase, app: String, now: Date) async
        -> Result<PlaySubmission, EndpointRefusal>
    {
        guard let googlePlay else {
            return .failure(EndpointRefusal(response: JSONError.response(.serviceUnavailable, "this server takes no Google Play evidence")))
        }
        if let entry = PlayAcknowledger.acknowledgement(of: play.purchase, app: app, catalog: play.app.catalog, seenAt: now) {
            do {
                _ = try await googlePlay.acknowledgements.enqueueAcknowledgement(entry)
            } catch {
                return .failure(EndpointRefusal(response: storeFailure(error)))
            }
        }
        guard play.purchase.state == .purchased else {
            return .success(.queued("the payment is pending: nothing is granted until Google says it is paid"))
        }
        guard let client = googlePlay.clients?.client(play.app, quick: true) else {
            return .success(.queued("Google is asked from the editor node, with the app's service account"))
        }
        let (token, catalog) = (play.token, play.app.catalog)
        let values: PlayLedgerValues
        do {
            values =
                catalog.isSubscription(play.productId)
                ? try await client.subscriptionPurchase(token).ledgerValues(token: token, answeredAt: now, catalog: catalog)
                : try await client.productPurchase(token).ledgerValues(token: token, answeredAt: now, catalog: catalog)
        } catch {
            logger.warning("play.purchase.deferred", metadata: ["feed.app": "\(app)", "error": "\(error)"])
            return .success(.queued("Google could not be asked now; the purchase is asked again shortly"))
        }
        guard !values.transactions.isEmpty else {
            return .success(.queued("Google shows no paid purchase for this token now; it is asked again"))
        }
        return .success(
            .record(
                values.submission(
                    app: app, receivedAt: now, source: .app, appAccount: verified.appAccountToken, transferPolicy: play.app.transferPolicy,
                    sendsWebhooks: play.app.sendsWebhooks))
        )
    }

    /// 202 `{"queued": true, "reason": …}`: evidence taken, whose state is asked of Google later.
    static func queued(_ reason: String) -> Response {
        var json = JSONWriter()
        json.beginObject()
        json.key("queued")
        json.boolean(true)
        json.key("reason")
        json.string(reason)
        json.endObject()
        return Response(
            status: .accepted, headers: [.contentType: "application/json", .cacheControl: "no-store"],
            body: ResponseBody(byteBuffer: ByteBuffer(bytes: json.bytes)))
    }

    /// `POST /v1/apps/{app}/notifications/google-play`: a Real-time Developer Notification pushed by
    /// Pub/Sub. Its push token is checked before the body is read (401 for a forged one, nothing
    /// kept); the envelope is stored once by Pub/Sub's `messageId` and answered 200 only then; a new
    /// purchase's acknowledgement is queued, and what changed is asked of Google.
    func playNotification(_ request: Request, app: String, revision: Int?, now: Date) async -> Response {
        guard request.method == .post else { return CatalogResponder.methodNotAllowed(request, allow: "POST") }
        guard let googlePlay else { return JSONError.response(.serviceUnavailable, "this server takes no Google Play evidence") }
        let served: Int
        switch await prepare(request, app: app, revision: revision, limit: GooglePlayEndpoints.maximumPushBytes) {
        case .failure(let refusal): return refusal.response
        case .success(let (_, number)): served = number
        }
        let play: PlayApp
        switch await playApp(app, revision: served, need: "playPackageName, playPushAudience and playPushServiceAccount") {
        case .failure(let refusal): return refusal.response
        case .success(let found): play = found
        }
        guard let push = play.push else {
            return JSONError.response(.conflict, "\(app) names no push subscription (playPushAudience, playPushServiceAccount)")
        }
        // The app takes pushes and the server cannot check them: the operator's to fix.
        guard let pushKeys = googlePlay.pushKeys else {
            return JSONError.response(
                .serviceUnavailable, "this server has no Google key set for push tokens (catalog serve --google-push-keys)")
        }
        let keys: GoogleKeySet
        switch pushKeys.keys() {
        case .failure(let error):
            logger.error("play.push.keys", metadata: ["error": "\(error)"])
            return JSONError.response(.serviceUnavailable, "Google's key set cannot be read")
        case .success(let found): keys = found
        }
        let authorization = request.headers[.authorization] ?? ""
        guard authorization.hasPrefix("Bearer ") else {
            metrics.recordPurchaseRefusal(endpoint: "play_notifications", code: PurchaseRefusal.Code.notAuthenticated.rawValue)
            return JSONError.response(.unauthorized, "a push carries Google's token in Authorization: Bearer")
        }
        do {
            try PushTokenVerifier(audience: push.audience, serviceAccount: push.serviceAccount, keys: keys)
                .verify(String(authorization.dropFirst(7)), now: now)
        } catch {
            metrics.recordPurchaseRefusal(endpoint: "play_notifications", code: error.code.rawValue)
            return JSONError.response(.unauthorized, error.reason)
        }
        let body: String
        switch await Self.body(request, limit: GooglePlayEndpoints.maximumPushBytes) {
        case .failure(let refusal): return refusal.response
        case .success(let text): body = text
        }
        guard let envelope = try? JSONDecoder().decode(PlayPushEnvelope.self, from: Data(body.utf8)),
            let messageId = envelope.message?.messageId, !messageId.isEmpty, messageId.utf8.count <= 128,
            let data = envelope.message?.data.flatMap({ Data(base64Encoded: $0) }),
            let notification = try? JSONDecoder().decode(PlayDeveloperNotification.self, from: data)
        else {
            return refuse(
                PurchaseRefusal(.malformed, "not a Pub/Sub push of a developer notification (message.data, message.messageId)"),
                endpoint: "play_notifications")
        }
        guard notification.packageName == play.packageName else {
            return refuse(
                PurchaseRefusal(.wrongApp, "the notification is of \(notification.packageName ?? "no package"), not \(play.packageName)"),
                endpoint: "play_notifications")
        }
        let eventTime = notification.eventTimeMillis.map { Date(timeIntervalSince1970: Double($0.value) / 1000) }
        let raw = RawNotification(
            app: app, marketplace: .googlePlay, notificationId: messageId, notificationType: notification.typeName, subtype: nil,
            environment: nil, signedDate: eventTime, receivedAt: now, body: body)
        let submission = PurchaseSubmission(
            app: app, receivedAt: now, source: .notification, notification: raw, transferPolicy: play.transferPolicy,
            sendsWebhooks: play.sendsWebhooks)
        let duplicate: Bool
        switch await committer.outcome(of: submission) {
        case .failure(let error): return storeFailure(error)
        case .success(let outcome): duplicate = outcome.duplicate
        }
        metrics.recordNotification(duplicate: duplicate)
        // What Google must be told, and what changed, are the outbox's from here on. Queued for a
        // redelivery too: Pub/Sub delivers again when this write failed after the envelope's did.
        if let token = notification.purchaseToken {
            let product = notification.oneTimeProductNotification?.sku ?? ""
            let isSubscription = notification.subscriptionNotification != nil || notification.voidedPurchaseNotification?.productType == 1
            let action = play.catalog.acknowledgementAction(
                productId: product, isSubscription: isSubscription, isChange: !notification.isPurchase)
            let entry = StoreAcknowledgement(
                app: app, marketplace: .googlePlay, purchaseKey: token, productId: product, action: action,
                nextAttemptAt: now,
                deadline: notification.isPurchase ? eventTime.map { $0.addingTimeInterval(PlayAcknowledger.window) } : nil, updatedAt: now)
            do {
                if notification.isPurchase {
                    _ = try await googlePlay.acknowledgements.enqueueAcknowledgement(entry)
                } else {
                    try await googlePlay.acknowledgements.requestRefresh(entry)
                }
            } catch {
                return storeFailure(error)
            }
        }
        var json = JSONWriter()
        json.beginObject()
        json.key("messageId")
        json.string(messageId)
        json.key(duplicate ? "duplicate" : "stored")
        json.boolean(true)
        json.endObject()
        return Self.ok(json.bytes)
    }
}
