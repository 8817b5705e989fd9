import CatalogKit
import FeedSigning
import Foundation
import HTTPSemantics
import HTTPTypes
import Hummingbird
import Logging
import NIOCore
import ServiceLifecycle
import Time

/// The routes of docs/contract.md section 3, matched by path segments.
///
/// A small fixed set of routes needs no general router, and matching them directly gives
/// what Hummingbird's router does not: 405 with `Allow` for a known path and a wrong method,
/// and JSON errors everywhere. Request paths never reach the filesystem: app names must be
/// bundle identifiers and revisions numbers before anything is looked up.
public struct CatalogResponder: HTTPResponder {
    public typealias Context = CatalogRequestContext

    let store: FeedStore
    let configuration: ServeConfiguration
    let metrics: ServerMetrics
    /// nil: this server stores no reports (tests of the feeds alone); the endpoint answers 503.
    let reports: ReportIntake?
    /// nil: no catalog sources or no store were given; `/v1/admin/` answers 503.
    let admin: AdminAPI?
    /// nil: no store that keeps purchases; the purchase endpoints answer 503.
    let purchases: PurchaseEndpoints?
    /// The content files and their keys; nil: content URLs answer 503.
    let content: ContentFiles?
    let logger: Logger
    /// Which routes this listener answers (``ListenerRole``).
    let role: ListenerRole

    init(
        store: FeedStore, configuration: ServeConfiguration, metrics: ServerMetrics, reports: ReportIntake?, admin: AdminAPI?,
        purchases: PurchaseEndpoints? = nil, content: ContentFiles? = nil, logger: Logger, role: ListenerRole = .all
    ) {
        self.purchases = purchases
        self.content = content
        self.logger = logger
        self.role = role
        self.store = store
        self.configuration = configuration
        self.metrics = metrics
        self.reports = reports
        self.admin = admin
    }

    public func respond(to request: Request, context: Context) async throws -> Response {
        let started = ContinuousClock.now
        let segments = request.uri.path.split(separator: "/", omittingEmptySubsequences: false).dropFirst().map(String.init)
        let route = Route(segments).flatMap { role.answers($0) ? $0 : nil }
        let response: Response
        var reportID: String?
        switch route {
        case nil: response = JSONError.response(.notFound, "no such resource: \(request.uri.path)")
        case .reports(let app)?: (response, reportID) = await receiveReport(request, app: app, context: context)
        case .content?: response = await contentFile(request)
        case .notifications(let app)?, .purchases(let app)?, .customer(let app, _)?, .customerLookup(let app)?, .contentList(let app)?:
            response = await purchase(request, at: route ?? .notifications(app: app), app: app, context: context)
        case .readiness?: response = await readiness(request)
        case .admin(let adminRoute)?:
            if configuration.isReplica {
                response = JSONError.response(.misdirectedRequest, Self.replicaRefusal)
            } else if let admin {
                response = await admin.respond(to: request, at: adminRoute)
            } else {
                response = JSONError.response(.serviceUnavailable, "this server has no catalog sources and store to edit")
            }
        case let route?: response = await respond(to: request, at: route)
        }
        metrics.recordRequest(route?.metricsRoute ?? .unknown, status: response.status.code, bodyBytes: response.body.contentLength ?? 0)
        if configuration.accessLog.enabled {
            let peer = context.remoteAddress?.ipAddress
            let client =
                reports?.client(peer: peer) { request.headers[values: HTTPField.Name($0)!] }
                ?? peer.flatMap { IPAddress($0) }.map(ClientAddress.init(peer:))
            configuration.accessLog.record(
                method: request.method.rawValue, path: request.uri.path, status: response.status.code,
                bytes: response.body.contentLength ?? 0, started: started, client: client,
                requestID: request.headers[values: AccessLog.requestIDField].first, reportID: reportID)
        }
        return response
    }

    /// What a replica answers an editor (docs/operations.md, "Replicas").
    static let replicaRefusal =
        "this node is a serving replica (catalog serve --feeds store): it holds no catalog sources and publishes nothing; edit, publish and read the editor API on the editor node, the one started with --feeds public beside catalog/"

    /// The answer, and the `reportId` a 202 stored the report under.
    private func receiveReport(_ request: Request, app: String, context: Context) async -> (Response, String?) {
        guard request.method == .post else { return (Self.methodNotAllowed(request, allow: "POST"), nil) }
        guard let reports else { return (JSONError.response(.serviceUnavailable, "this server does not store reports"), nil) }
        let answer = await reports.respond(
            to: request, app: app, published: store.index.apps[app], peer: context.remoteAddress?.ipAddress, now: configuration.clock())
        return (answer.response, answer.reportID)
    }

    /// The purchase endpoints, on a store that keeps purchases (503 elsewhere), on every node: the
    /// apps' settings come from each revision's purchase record, which replicas receive through the
    /// store. A backend's read by token is the editor node's, as the tokens are (``PurchaseEndpoints/backendToken(_:app:)``).
    private func purchase(_ request: Request, at route: Route, app: String, context: Context) async -> Response {
        guard let purchases else { return JSONError.response(.serviceUnavailable, "this server keeps no purchases") }
        let revision = store.index.apps[app]?.manifest.revision
        let now = configuration.instant()
        switch route {
        case .notifications:
            return await purchases.notification(request, app: app, revision: revision, now: now)
        case .purchases:
            return await purchases.purchase(request, app: app, revision: revision, networkKey: networkKey(request, context), now: now)
        case .customerLookup:
            return await purchases.lookup(request, app: app, revision: revision, networkKey: networkKey(request, context), now: now)
        case .contentList:
            guard let content else {
                return JSONError.response(.serviceUnavailable, "this server delivers no content: it was started without --content-keys")
            }
            return await purchases.content(
                request, app: app, revision: revision, networkKey: networkKey(request, context), now: now, files: content, tree: store.tree,
                lifetime: configuration.content.urlLifetime)
        case .customer(_, let id):
            return await purchases.customer(request, app: app, id: id, revision: revision, now: now)
        default:
            return JSONError.response(.notFound, "no such resource: \(request.uri.path)")
        }
    }

    /// The client's network, by the reports' rule (`--trusted-proxy`, prefix lengths), that
    /// per-network rate limits count under.
    func networkKey(_ request: Request, _ context: Context) -> String? {
        let peer = context.remoteAddress?.ipAddress
        let client = reports?.client(peer: peer) { name in HTTPField.Name(name).map { request.headers[values: $0] } ?? [] }
        return client.flatMap { address in reports?.networks.prefixes.key(of: address.address) } ?? peer
    }

    /// Ready once the feeds are loaded and the report store answers.
    private func readiness(_ request: Request) async -> Response {
        guard request.method == .get || request.method == .head else { return Self.methodNotAllowed(request, allow: "GET, HEAD") }
        // From the moment a graceful shutdown begins, a load balancer must stop sending here.
        if Task.isShuttingDownGracefully { return JSONError.response(.serviceUnavailable, "shutting down") }
        let apps = store.index.apps.count
        if let reports {
            do {
                // Bounded: a pool that cannot reach its server waits for a connection far longer
                // than a load balancer's probe does, and the probe must hear "not ready" in time.
                let store = reports.store
                try await withThrowingTaskGroup(of: Void.self) { group in
                    group.addTask { try await store.ping() }
                    group.addTask {
                        try await Task.sleep(for: .seconds(2))
                        throw StoreTimeout()
                    }
                    try await group.next()
                    group.cancelAll()
                }
            } catch {
                // The store's error may name its host or file; the operator's log has it, the answer does not.
                logger.error("readiness.store", metadata: ["error": "\(error)"])
                return JSONError.response(.serviceUnavailable, "the report store does not answer")
            }
        }
        return JSONResponse.ok(#"{"status":"ready","apps":\#(apps)}"#)
    }

    static func methodNotAllowed(_ request: Request, allow: String) -> Response {
        var response = JSONError.response(
            .methodNotAllowed, "\(request.method.rawValue) is not allowed here; use \(allow.replacingOccurrences(of: ", ", with: " or "))")
        response.headers[.allow] = allow
        return response
    }

    private func respond(to request: Request, at route: Route) async -> Response {
        guard request.method == .get || request.method == .head else { return Self.methodNotAllowed(request, allow: "GET, HEAD") }
        let now = configuration.clock()
        switch route {
        case .health:
            return JSONResponse.ok(#"{"status":"ok"}"#)
        case .metrics:
            return Response(
                status: .ok, headers: [.contentType: "text/plain; version=0.0.4", .cacheControl: "no-store"],
                body: ResponseBody(byteBuffer: ByteBuffer(bytes: metrics.render())))
        case .readiness, .reports, .admin, .notifications, .purchases, .customer, .customerLookup, .content, .contentList:
            preconditionFailure("answered by respond(to:context:)")
        case .editor(let asset):
            return EditorAssets.response(for: asset, request: request)
        case .editorWithoutSlash:
            return EditorAssets.redirect()
        case .openAPI:
            return Response(
                status: .ok, headers: [.contentType: "application/yaml", .cacheControl: "no-cache"],
                body: ResponseBody(byteBuffer: ByteBuffer(bytes: role == .publicOnly ? OpenAPIDocument.publicHalf : OpenAPIDocument.bytes)))
        case .apps:
            return JSONResponse.ok(appsIndex())
        case .feed(let app, let kind):
            let query = request.uri.queryParameters
            let lookup = store.index.feed(
                app: app, kind: kind, platform: query.get("platform"), appVersion: query.get("appVersion"), at: now)
            switch lookup {
            case .failure(let error):
                return JSONError.response(HTTPResponse.Status(code: error.status), error.description)
            case .success(let feed):
                return respond(
                    with: feed, bodies: store.bodies(of: feed), to: request, now: now, cacheControl: configuration.cacheControl)
            }
        case .variantFeed(let app, let platform, let band, let kind):
            switch store.index.feed(app: app, kind: kind, platformKey: platform, bandKey: band, at: now) {
            case .failure(let error):
                return JSONError.response(HTTPResponse.Status(code: error.status), error.description)
            case .success(let feed):
                return respond(
                    with: feed, bodies: store.bodies(of: feed), to: request, now: now, cacheControl: configuration.cacheControl)
            }
        case .variantIndex(let app):
            guard let published = store.index.apps[app] else { return JSONError.response(.notFound, "no published app '\(app)'") }
            return variantIndex(published.variantIndex, to: request)
        case .revisions(let app):
            guard let json = await store.revisionList(app) else { return JSONError.response(.notFound, "no published app '\(app)'") }
            return JSONResponse.ok(String(decoding: json, as: UTF8.self))
        case .snapshot(let app, let revision, let kind):
            guard let snapshot = await store.snapshot(app, revision: revision, kind: kind) else {
                return JSONError.response(.notFound, "no revision \(revision) of app '\(app)'")
            }
            return respond(
                with: snapshot.feed, bodies: snapshot.bodies, to: request, now: now, cacheControl: configuration.immutableCacheControl)
        }
    }

    /// Hummingbird replaces the Date header with a value it refreshes once a second, up to a
    /// second behind the clock; Last-Modified must never be later than it.
    static let dateLag: Int64 = 1

    private func respond(
        with feed: ServedFeed, bodies: FeedBodies, to request: Request, now: Timestamp, cacheControl: String
    ) -> Response {
        let decided = FeedResponse.decide(
            feed: feed,
            conditions: ConditionalRequest(
                ifNoneMatch: request.headers[values: .ifNoneMatch], ifModifiedSince: request.headers[values: .ifModifiedSince]),
            acceptEncoding: request.headers[values: .acceptEncoding], isHead: request.method == .head, now: now,
            cacheControl: cacheControl, dateLag: Self.dateLag)
        var headers = HTTPFields()
        for (name, value) in decided.headers {
            if let field = HTTPField.Name(name) { headers[field] = value }
        }
        // The feed's own buffer, shared with every other response: no copy per request.
        let body = decided.body == nil ? ResponseBody() : ResponseBody(byteBuffer: bodies.body(gzip: decided.choice.gzip))
        return Response(status: HTTPResponse.Status(code: decided.status), headers: headers, body: body)
    }

    /// `variants.json`, with its entity tag; it has no Last-Modified of its own (its bytes change
    /// only when the app's platforms or bands do), so If-None-Match alone revalidates it.
    private func variantIndex(_ index: FeedRepresentation, to request: Request) -> Response {
        let headers: HTTPFields = [.contentType: "application/json", .cacheControl: configuration.cacheControl, .eTag: index.entityTag]
        let matches = request.headers[values: .ifNoneMatch].flatMap { $0.split(separator: ",") }.contains {
            let tag = $0.trimmingCharacters(in: .whitespaces)
            return tag == "*" || tag == index.entityTag || tag == "W/" + index.entityTag
        }
        if matches { return Response(status: .notModified, headers: headers) }
        let body = request.method == .head ? ResponseBody() : ResponseBody(byteBuffer: ByteBuffer(bytes: index.bytes))
        return Response(status: .ok, headers: headers, body: body)
    }

    private func appsIndex() -> String {
        let apps = store.index.apps.sorted(by: { $0.key < $1.key }).map { app, published in
            AppList.App(app: app, revision: published.manifest.revision, publishedAt: published.manifest.publishedAt.iso8601)
        }
        return String(decoding: ServiceJSON.encode(AppList(apps: apps)), as: UTF8.self)
    }

}

/// The paths the server knows.
enum Route: Equatable {
    case health, readiness, metrics, apps, openAPI
    case feed(app: String, kind: FeedKind)
    /// `v1/apps/<app>/variants/<platform>/<band>/<feed>`: one variant at a path of its own.
    case variantFeed(app: String, platform: String, band: String, kind: FeedKind)
    /// `v1/apps/<app>/variants.json`: the platforms and bands, for clients to find their variant's path.
    case variantIndex(app: String)
    case revisions(app: String)
    case reports(app: String)
    /// `v1/apps/<app>/notifications/app-store`: App Store Server Notifications V2.
    case notifications(app: String)
    /// `v1/apps/<app>/purchases`: evidence an app sends.
    case purchases(app: String)
    /// `v1/apps/<app>/customers/<id>`: a customer, by any of its keys.
    case customer(app: String, id: String)
    /// `v1/apps/<app>/customers/lookup`: the app's own customer, by the evidence it presents
    /// ("lookup" is no key: keys are UUIDs and Apple's numeric ids).
    case customerLookup(app: String)
    /// `v1/apps/<app>/content`: what a customer may download.
    case contentList(app: String)
    /// `v1/content/<sha256>`: a signed content URL (the lean path answers most of them).
    case content
    case snapshot(app: String, revision: Int, kind: FeedKind)
    case admin(AdminRoute)
    /// The dashboard's page ("") or one of its files; ``EditorAssets`` knows which exist.
    case editor(asset: String)
    /// `/editor`, redirected to `/editor/`.
    case editorWithoutSlash

    /// Every path, as `docs`' OpenAPI document spells it: a test holds the two together.
    static let templates = [
        "/healthz", "/readyz", "/metrics", "/openapi.yaml", "/v1/apps", "/v1/apps/{app}/products.json", "/v1/apps/{app}/catalog.json",
        "/v1/apps/{app}/variants.json", "/v1/apps/{app}/variants/{platform}/{band}/products.json",
        "/v1/apps/{app}/variants/{platform}/{band}/catalog.json",
        "/v1/apps/{app}/revisions", "/v1/apps/{app}/invalid-identifiers", "/v1/apps/{app}/notifications/app-store",
        "/v1/apps/{app}/purchases", "/v1/apps/{app}/customers/{id}", "/v1/apps/{app}/customers/lookup", "/v1/apps/{app}/content",
        "/v1/content/{sha256}",
        "/v1/apps/{app}/revisions/{revision}/products.json",
        "/v1/apps/{app}/revisions/{revision}/catalog.json", "/v1/admin/apps", "/v1/admin/apps/{app}", "/v1/admin/apps/{app}/products",
        "/v1/admin/apps/{app}/products/{id}", "/v1/admin/apps/{app}/products/{id}/retire", "/v1/admin/apps/{app}/publish",
        "/v1/admin/apps/{app}/reports", "/v1/admin/apps/{app}/reports/daily", "/v1/admin/apps/{app}/feedback/{id}/release",
        "/v1/admin/apps/{app}/feedback/{id}/quarantine",
        "/v1/admin/apps/{app}/revisions", "/v1/admin/apps/{app}/diff", "/v1/admin/apps/{app}/revisions/{revision}/rollback",
        "/v1/admin/apps/{app}/customers/{id}", "/v1/admin/apps/{app}/customers/{id}/content", "/v1/admin/audit", "/editor", "/editor/",
        "/editor/editor.css", "/editor/editor.js",
    ]

    init?(_ segments: [String]) {
        if segments.count >= 3 && segments[0] == "v1" && segments[1] == "admin" {
            guard let route = AdminRoute(segments.dropFirst(2)) else { return nil }
            self = .admin(route)
            return
        }
        switch segments.count {
        case 1 where segments[0] == "editor": self = .editorWithoutSlash
        case 2 where segments[0] == "editor":
            guard EditorAssets.files[segments[1]] != nil else { return nil }
            self = .editor(asset: segments[1])
        case 1 where segments[0] == "openapi.yaml": self = .openAPI
        case 1 where segments[0] == "healthz": self = .health
        case 1 where segments[0] == "readyz": self = .readiness
        case 1 where segments[0] == "metrics": self = .metrics
        case 2 where segments == ["v1", "apps"]: self = .apps
        // The digest and the signature are checked by ``ContentFiles``, before any disk access.
        case 3 where segments[0] == "v1" && segments[1] == "content": self = .content
        case 4 where segments[0] == "v1" && segments[1] == "apps":
            guard AppName.problem(segments[2]) == nil else { return nil }
            if let kind = FeedKind(rawValue: segments[3]) {
                self = .feed(app: segments[2], kind: kind)
            } else if segments[3] == FeedVariants.indexName {
                self = .variantIndex(app: segments[2])
            } else if segments[3] == "revisions" {
                self = .revisions(app: segments[2])
            } else if segments[3] == "invalid-identifiers" {
                self = .reports(app: segments[2])
            } else if segments[3] == "purchases" {
                self = .purchases(app: segments[2])
            } else if segments[3] == "content" {
                self = .contentList(app: segments[2])
            } else {
                return nil
            }
        case 5 where segments[0] == "v1" && segments[1] == "apps" && segments[3] == "notifications" && segments[4] == "app-store":
            guard AppName.problem(segments[2]) == nil else { return nil }
            self = .notifications(app: segments[2])
        case 5 where segments[0] == "v1" && segments[1] == "apps" && segments[3] == "customers":
            // A key is a UUID or Apple's numeric ids: nothing else reaches the store.
            let id = segments[4]
            if id == "lookup", AppName.problem(segments[2]) == nil {
                self = .customerLookup(app: segments[2])
                return
            }
            guard AppName.problem(segments[2]) == nil, (1...128).contains(id.utf8.count),
                id.utf8.allSatisfy({
                    $0.isASCIIAlphanumericByte || $0 == UInt8(ascii: "-") || $0 == UInt8(ascii: "_") || $0 == UInt8(ascii: ".")
                })
            else { return nil }
            self = .customer(app: segments[2], id: id)
        case 6 where segments[0] == "v1" && segments[1] == "apps" && segments[3] == "revisions":
            guard AppName.problem(segments[2]) == nil, segments[4].allSatisfy(\.isASCIIDigitCharacter),
                let revision = Int(segments[4]), revision > 0, let kind = FeedKind(rawValue: segments[5])
            else { return nil }
            self = .snapshot(app: segments[2], revision: revision, kind: kind)
        case 7 where segments[0] == "v1" && segments[1] == "apps" && segments[3] == "variants":
            // Only the names a published variant can have; FeedIndex says which exist.
            guard AppName.problem(segments[2]) == nil, let kind = FeedKind(rawValue: segments[6]),
                !segments[4].isEmpty, segments[4].count <= 16, segments[4].allSatisfy({ $0.isASCII && $0.isLowercase }),
                segments[5] == "any"
                    || (!segments[5].isEmpty && segments[5].count <= 40
                        && segments[5].allSatisfy { $0.isASCII && ($0.isNumber || $0 == ".") })
            else { return nil }
            self = .variantFeed(app: segments[2], platform: segments[4], band: segments[5], kind: kind)
        default:
            return nil
        }
    }
}

/// Which routes a listener answers. With `--admin-port`, the public listener keeps the feeds,
/// reports and health, and the admin listener takes the editor API, the dashboard and `/metrics`,
/// so that only the former need face the internet.
public enum ListenerRole: Sendable {
    /// One listener answers everything (no `--admin-port`).
    case all
    /// Feeds, revisions, reports, health, readiness, and the public half of `/openapi.yaml`.
    case publicOnly
    /// The editor API, the dashboard, `/metrics`, the whole `/openapi.yaml`, health and readiness.
    case adminOnly

    func answers(_ route: Route) -> Bool {
        switch (self, route) {
        case (.all, _), (_, .health), (_, .readiness), (_, .openAPI): true
        case (.publicOnly, _): !route.isAdmin
        case (.adminOnly, _): route.isAdmin
        }
    }
}

extension Route {
    /// The routes for editors and operators: moved to the admin listener when there is one.
    var isAdmin: Bool {
        switch self {
        case .admin, .editor, .editorWithoutSlash, .metrics: true
        default: false
        }
    }

    var metricsRoute: MetricsRoute {
        switch self {
        case .health: .healthz
        case .readiness: .readyz
        case .metrics: .metrics
        case .apps: .apps
        case .feed(_, let kind), .variantFeed(_, _, _, let kind): MetricsRoute(kind)
        case .variantIndex: .variants
        case .revisions: .revisions
        case .reports: .reports
        case .notifications: .notifications
        case .purchases: .purchases
        case .customer: .customers
        case .customerLookup: .customerLookup
        case .content: .content
        case .contentList: .contentList
        case .snapshot(_, _, let kind): kind == .products ? .revisionProducts : .revisionCatalog
        case .admin: .admin
        case .openAPI: .openapi
        case .editor, .editorWithoutSlash: .editor
        }
    }
}

extension Character {
    fileprivate var isASCIIDigitCharacter: Bool { isASCII && isNumber }
}

extension UInt8 {
    fileprivate var isASCIIAlphanumericByte: Bool {
        (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(self) || (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(self)
            || (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(self)
    }
}

/// `{"error":{"message":"…"}}` with the right status, as every error of the service.
///
/// Written by hand, not by `JSONEncoder`: error bodies are answered on the report path (a 429 or a 400
/// for every refused report), where two other encoders measured slower and the report's answer no
/// different (docs/benchmarks.md, "JSON on the report path"); error bodies were not measured on their
/// own. `ServiceJSONTests.errorsAreAsDocumented` holds them to their schema all the same.
enum JSONError {
    /// `members` are further members of the error object (diagnostics, the current state), each
    /// already one JSON value.
    static func response(_ status: HTTPResponse.Status, _ message: String, appending members: [(key: String, json: [UInt8])] = [])
        -> Response
    {
        Response(
            status: status, headers: [.contentType: "application/json"],
            body: ResponseBody(byteBuffer: ByteBuffer(bytes: body(message, appending: members))))
    }

    /// `{"error":{"message":…}}`, then `members`.
    static func body(_ message: String, appending members: [(key: String, json: [UInt8])] = []) -> [UInt8] {
        var json = JSONWriter()
        json.beginObject()
        json.key("error")
        json.beginObject()
        json.key("message")
        json.string(message)
        for (key, value) in members {
            json.key(key)
            json.raw(value)
        }
        json.endObject()
        json.endObject()
        return json.bytes
    }
}

enum JSONResponse {
    static func ok(_ json: String) -> Response {
        Response(
            status: .ok, headers: [.contentType: "application/json", .cacheControl: "no-store"],
            body: ResponseBody(byteBuffer: ByteBuffer(string: json)))
    }

    /// 200 with bytes `ServiceJSON` encoded.
    static func ok(_ json: [UInt8]) -> Response {
        Response(
            status: .ok, headers: [.contentType: "application/json", .cacheControl: "no-store"],
            body: ResponseBody(byteBuffer: ByteBuffer(bytes: json)))
    }
}

/// The store did not answer readiness's ping in time.
private struct StoreTimeout: Error, CustomStringConvertible {
    var description: String { "no answer within 2 seconds" }
}
