import Foundation
import HTTPTypes
import Hummingbird

extension CatalogResponder {
    /// The purchase endpoints (docs/purchases.md), on a store that keeps purchases (503
    /// elsewhere), on every node: the apps' settings come from each revision's purchase record,
    /// which replicas receive through the store. A backend's read by token is the editor node's,
    /// as the tokens are (``PurchaseEndpoints/backendToken(_:app:)``).
    static let purchaseRoutes = RouteTable(
        "purchases", listener: .public, parameters: ["app": .appName, "id": .customerKey], availability: .purchases,
        [
            notificationRoute,
            RouteSpec("/v1/apps/{app}/purchases", .post, metrics: "purchases") { await $0.purchase($1) },
            RouteSpec("/v1/apps/{app}/notifications/google-play", .post, metrics: "play_notifications") { await $0.playNotification($1) },
            // "lookup" is no key (keys are UUIDs and Apple's numeric ids): matched before `{id}`.
            // A lookup reads `?at=` before the method.
            RouteSpec("/v1/apps/{app}/customers/lookup", .post, metrics: "customer_lookup", methodRefusal: .byHandler) {
                await $0.customerLookup($1)
            },
            RouteSpec("/v1/apps/{app}/customers/{id}", .get, .head, metrics: "customers") { await $0.customer($1) },
            RouteSpec("/v1/apps/{app}/customers/{id}/import", .post, metrics: "customer_import") { await $0.customerImport($1) },
        ])

    /// Named apart: the lean path (``LeanPostHandler``) counts what it answers under its label.
    static let notificationRoute = RouteSpec("/v1/apps/{app}/notifications/app-store", .post, metrics: "notifications") {
        await $0.notification($1)
    }

    /// `POST /v1/apps/{app}/notifications/app-store`: App Store Server Notifications V2.
    func notification(_ call: RouteCall) async -> Response {
        await withPurchases(call) { purchases, revision, now in
            await purchases.notification(call.request, app: call.app, revision: revision, now: now)
        }
    }

    /// `POST /v1/apps/{app}/purchases`: evidence an app sends, of either store.
    func purchase(_ call: RouteCall) async -> Response {
        await withPurchases(call) { purchases, revision, now in
            await purchases.purchase(call.request, app: call.app, revision: revision, networkKey: networkKey(call), now: now)
        }
    }

    /// `POST /v1/apps/{app}/notifications/google-play`: Google Play's Real-time Developer Notifications.
    func playNotification(_ call: RouteCall) async -> Response {
        await withPurchases(call) { purchases, revision, now in
            await purchases.playNotification(call.request, app: call.app, revision: revision, now: now)
        }
    }

    /// `POST /v1/apps/{app}/customers/lookup`: the app's own customer, by the evidence it presents.
    func customerLookup(_ call: RouteCall) async -> Response {
        await withPurchases(call) { purchases, revision, now in
            await purchases.lookup(call.request, app: call.app, revision: revision, networkKey: networkKey(call), now: now)
        }
    }

    /// `GET /v1/apps/{app}/customers/{id}`: a customer, by any of its keys, for a backend.
    func customer(_ call: RouteCall) async -> Response {
        await withPurchases(call) { purchases, revision, now in
            await purchases.customer(call.request, app: call.app, id: call.parameters["id"], revision: revision, now: now)
        }
    }

    /// `POST /v1/apps/{app}/customers/{id}/import`: a customer's App Store history, for a backend.
    func customerImport(_ call: RouteCall) async -> Response {
        await withPurchases(call) { purchases, revision, now in
            await purchases.customerImport(call.request, app: call.app, id: call.parameters["id"], revision: revision, now: now)
        }
    }

    /// `body` with the purchase endpoints, the revision the app serves and the instant to record at.
    func withPurchases(
        _ call: RouteCall, _ body: (PurchaseEndpoints, _ revision: Int?, _ now: Date) async -> Response
    ) async -> Response {
        guard let purchases else { return Self.noPurchases }
        return await body(purchases, store.index.apps[call.app]?.manifest.revision, configuration.instant())
    }

    static var noPurchases: Response { JSONError.response(.serviceUnavailable, "this server keeps no purchases") }

    /// The client's network, by the reports' rule (`--trusted-proxy`, prefix lengths), that
    /// per-network rate limits count under.
    func networkKey(_ call: RouteCall) -> String? {
        let peer = call.context.remoteAddress?.ipAddress
        let client = reports?.client(peer: peer) { name in HTTPField.Name(name).map { call.request.headers[values: $0] } ?? [] }
        return client.flatMap { address in reports?.networks.prefixes.key(of: address.address) } ?? peer
    }
}

extension RouteAvailability {
    /// A store that keeps purchases.
    static let purchases = RouteAvailability { $0.purchases == nil ? CatalogResponder.noPurchases : nil }
}

extension MetricsRoute {
    /// App Store notifications, on either path.
    static let notifications = CatalogResponder.notificationRoute.metricsName
}
