import CatalogKit
import HTTPTypes
import Hummingbird

extension AdminAPI {
    /// The editor API under `/v1/admin/`: every route needs a token, and those that change the
    /// catalog an editor's; an editor node's only (a replica answers 421).
    static let routes = RouteTable(
        "admin", listener: .admin, parameters: ["app": .appName, "id": .productIdentifier, "revision": .revision],
        availability: .editorAPI,
        [
            route("/v1/admin/apps", .get) { admin, _ in try admin.apps() },
            route("/v1/admin/apps/{app}", .get) { admin, call in try admin.appState(call.app) },
            route("/v1/admin/apps/{app}/products", .post, .changes) { admin, call in
                try await admin.edit(call.request, app: call.app, actor: call.actor) { .create($0) }
            },
            route("/v1/admin/apps/{app}/products/{id}", .put, .changes, methodRefusal: .productsAreNeverDeleted) { admin, call in
                try await admin.edit(call.request, app: call.app, actor: call.actor) { .update(id: call.id, $0) }
            },
            route("/v1/admin/apps/{app}/products/{id}/retire", .post, .changes) { admin, call in
                try await admin.edit(call.request, app: call.app, actor: call.actor, body: false) { _ in .retire(id: call.id) }
            },
            route("/v1/admin/apps/{app}/publish", .post, .publishes) { admin, call in
                try await admin.publish(call.request, app: call.app, dryRun: call.dryRun, actor: call.actor)
            },
            route("/v1/admin/apps/{app}/reports", .get) { admin, call in try await admin.reports(call.request, app: call.app) },
            // One identifier's reports per day, for the dashboard's chart.
            route("/v1/admin/apps/{app}/reports/daily", .get) { admin, call in try await admin.dailyReports(call.request, app: call.app) },
            route("/v1/admin/apps/{app}/feedback/{id}/release", .post, .changes) { admin, call in
                try await admin.decide(app: call.app, id: call.id, actor: call.actor, key: .released) { workflow, now in
                    try workflow.releaseFeedback(app: call.app, identifier: call.id, at: now)
                }
            },
            // An editor's quarantine of an identifier past the budget or a store-wide alert.
            route("/v1/admin/apps/{app}/feedback/{id}/quarantine", .post, .changes) { admin, call in
                try await admin.decide(app: call.app, id: call.id, actor: call.actor, key: .quarantined) { workflow, now in
                    try workflow.confirmQuarantine(app: call.app, identifier: call.id, by: call.actor, at: now)
                }
            },
            route("/v1/admin/apps/{app}/revisions", .get) { admin, call in try admin.revisions(call.request, app: call.app) },
            route("/v1/admin/apps/{app}/diff", .get) { admin, call in try admin.diff(call.request, app: call.app) },
            route("/v1/admin/apps/{app}/revisions/{revision}/rollback", .post, .changes) { admin, call in
                try await admin.rollback(call.request, app: call.app, to: call.parameters.revision, actor: call.actor)
            },
            // A customer of the app by any of its keys, for the dashboard's customer page.
            route("/v1/admin/apps/{app}/customers/{id}", .get) { admin, call in
                await admin.customer(call.request, app: call.app, id: call.id, read: admin.customers)
            },
            // What that customer may download of the app's content now, and why, for the same page.
            route("/v1/admin/apps/{app}/customers/{id}/content", .get) { admin, call in
                await admin.customer(call.request, app: call.app, id: call.id, read: admin.customerContent)
            },
            route("/v1/admin/audit", .get) { admin, call in try await admin.audit(call.request) },
        ])

    /// What a route of the editor API does to the catalog, which decides the role its token needs.
    enum Effect: Sendable {
        case reads
        case changes
        /// A publication: a dry run only shows what would change, and viewers may see it.
        case publishes

        func changes(dryRun: Bool) -> Bool {
            switch self {
            case .reads: false
            case .changes: true
            case .publishes: !dryRun
            }
        }
    }

    /// One route of the editor API, counted as `admin`; its handler runs once the token allows
    /// `effect`, and its errors become answers (``respond(to:effect:_:)``).
    static func route(
        _ template: String, _ method: HTTPRequest.Method, _ effect: Effect = .reads, methodRefusal: MethodRefusal = .usual,
        _ handler: @escaping @Sendable (AdminAPI, AdminCall) async throws -> Response
    ) -> RouteSpec {
        RouteSpec(template, method, metrics: "admin", methodRefusal: methodRefusal) { responder, call in
            switch responder.editorAPI() {
            case .failure(let refusal): refusal.response
            case .success(let admin): await admin.respond(to: call, effect: effect, handler)
            }
        }
    }

    /// Product identifiers as the rules allow them (at most 100 of `[A-Za-z0-9._-]`), so that
    /// nothing else in a path or a query reaches the sources.
    static func isIdentifier(_ text: String) -> Bool {
        PathParameter.isIdentifier(text, maximumLength: 100)
    }
}

/// A request to the editor API with its token checked: what a route's handler is given.
struct AdminCall: Sendable {
    let request: Request
    let parameters: PathParameters
    let token: EditorToken
    /// `?dryRun=true`: show what would change, change nothing.
    let dryRun: Bool

    /// `{app}`.
    var app: String { parameters["app"] }
    /// `{id}`: a product identifier, or a customer's key.
    var id: String { parameters["id"] }
    /// Whom the audit log names.
    var actor: String { token.name }
}

extension CatalogResponder {
    /// The editor API, or why this server has none.
    func editorAPI() -> Result<AdminAPI, AdminAPI.Refusal> {
        if configuration.isReplica {
            return .failure(AdminAPI.Refusal(response: JSONError.response(.misdirectedRequest, Self.replicaRefusal)))
        }
        guard let admin else {
            return .failure(
                AdminAPI.Refusal(response: JSONError.response(.serviceUnavailable, "this server has no catalog sources and store to edit")))
        }
        return .success(admin)
    }

    /// What a replica answers an editor (docs/operations.md, "Replicas").
    static let replicaRefusal =
        "this node is a serving replica (catalog serve --feeds store): it holds no catalog sources and publishes nothing; edit, publish and read the editor API on the editor node, the one started with --feeds public beside catalog/"
}

extension RouteAvailability {
    /// An editor node with catalog sources and a store.
    static let editorAPI = RouteAvailability { responder in
        if case .failure(let refusal) = responder.editorAPI() { refusal.response } else { nil }
    }
}

extension MethodRefusal {
    /// `DELETE` of a product says why there is no such thing.
    static let productsAreNeverDeleted = MethodRefusal.own { request, allow in
        guard request.method == .delete else { return nil }
        var response = JSONError.response(
            .methodNotAllowed, "a product is never deleted: App Store identifiers cannot be reused; POST …/retire to retire it")
        response.headers[.allow] = allow
        return response
    }
}
