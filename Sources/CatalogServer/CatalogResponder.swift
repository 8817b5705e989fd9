import CatalogKit
import FeedSigning
import Foundation
import HTTPSemantics
import HTTPTypes
import Hummingbird
import Logging
import NIOCore

/// The routes of docs/contract.md section 3, declared per feature (``RouteTable``) and matched by
/// path segments (``RouteMatcher``).
///
/// Each feature's table sits beside its handlers: the feeds (`Feeds/FeedRoutes.swift`), reports,
/// purchases, content, operations (`Routing/OperationRoutes.swift`), the editor API and the
/// dashboard (`Admin/`). Request paths never reach the filesystem: app names must be bundle
/// identifiers and revisions numbers before anything is looked up (``PathParameter``).
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

    /// Every feature's routes: a new route joins its feature's table, a new feature's table joins here.
    static let routeTables = [
        feedRoutes, reportRoutes, purchaseRoutes, contentRoutes, operationRoutes, AdminAPI.routes, EditorAssets.routes,
    ]

    static let routes = RouteMatcher(routeTables)

    public func respond(to request: Request, context: Context) async throws -> Response {
        let started = ContinuousClock.now
        let matched = Self.routes.match(request.uri.path).flatMap { role.answers($0.route.listener) ? $0 : nil }
        let answer: RouteAnswer
        if let matched {
            answer = await matched.route.respond(self, to: RouteCall(request: request, context: context, parameters: matched.parameters))
        } else {
            answer = RouteAnswer(JSONError.response(.notFound, "no such resource: \(request.uri.path)"))
        }
        let response = answer.response
        metrics.recordRequest(
            matched?.route.metricsName ?? .unknown, status: response.status.code, bodyBytes: response.body.contentLength ?? 0)
        if configuration.accessLog.enabled {
            let peer = context.remoteAddress?.ipAddress
            let client = ReportIntake.loggedClient(reports, peer: peer) { request.headers[values: HTTPField.Name($0)!] }
            configuration.accessLog.record(
                method: request.method.rawValue, path: request.uri.path, status: response.status.code,
                bytes: response.body.contentLength ?? 0, started: started, client: client,
                requestID: request.headers[values: AccessLog.requestIDField].first, reportID: answer.reportID)
        }
        return response
    }

    /// 405 with `Allow`, for a method a route does not answer.
    static func methodNotAllowed(_ request: Request, allow: String) -> Response {
        var response = JSONError.response(
            .methodNotAllowed, "\(request.method.rawValue) is not allowed here; use \(allow.replacingOccurrences(of: ", ", with: " or "))")
        response.headers[.allow] = allow
        return response
    }
}

/// Which routes a listener answers. With `--admin-port`, the public listener keeps the feeds,
/// reports and health, and the admin listener takes the editor API, the dashboard and `/metrics`,
/// so that only the former need face the internet. Each route says which it is (``RouteListener``).
public enum ListenerRole: Sendable {
    /// One listener answers everything (no `--admin-port`).
    case all
    /// Feeds, revisions, reports, health, readiness, and the public half of `/openapi.yaml`.
    case publicOnly
    /// The editor API, the dashboard, `/metrics`, the whole `/openapi.yaml`, health and readiness.
    case adminOnly

    func answers(_ listener: RouteListener) -> Bool {
        switch (self, listener) {
        case (.all, _), (_, .both): true
        case (.publicOnly, let listener): listener == .public
        case (.adminOnly, let listener): listener == .admin
        }
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
