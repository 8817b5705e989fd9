import CatalogKit
import Foundation
import HTTPTypes
import Hummingbird
import NIOCore
import PropertyList
import Time

/// Reading: apps, an app's state, reports and their daily counts, the audit log.
extension AdminAPI {
    func apps() throws -> Response {
        let tree = PublicTree(root: workflow.publicDirectory)
        var apps: [EditorAppList.App] = []
        for app in workflow.sourceApps() {
            guard let revision = try workflow.sourceRevision(app) else { continue }
            apps.append(.init(app: app, sourceRevision: revision, publishedRevision: try tree.currentManifest(app)?.revision))
        }
        return JSONResponse.ok(ServiceJSON.encode(EditorAppList(apps: apps)))
    }

    func appState(_ app: String) throws -> Response {
        let state = try workflow.appState(app)
        var response = JSONResponse.ok(AppStateAnswer(state).json)
        response.headers[.eTag] = Self.entityTag(state.sourceRevision)
        return response
    }

    static func entityTag(_ revision: String) -> String { "\"\(revision)\"" }

    func reports(_ request: Request, app: String) async throws -> Response {
        let now = clock()
        var since: Timestamp?
        if let text = request.uri.queryParameters.get("since") {
            guard let interval = Interval(text) else {
                throw Refusal(response: JSONError.response(.badRequest, "since=\(text) is not a span such as 90s, 30m, 24h, 7d or 2w"))
            }
            since = interval.before(now)
        }
        let limit = try Self.limit(request, default: 100) ?? 100
        let offset = try Self.offset(request)
        _ = try workflow.appState(app)
        let document = try await workflow.reports(store: store, app: app, since: since, at: now, page: offset..<(offset + limit))
        return JSONResponse.ok(String(decoding: try Self.encoder.encode(document), as: UTF8.self))
    }

    /// Every day of the last `days` (today included, UTC), with the reports that named the
    /// identifier invalid on it: days without reports are there with 0, so that a chart needs
    /// nothing but this.
    func dailyReports(_ request: Request, app: String) async throws -> Response {
        let query = request.uri.queryParameters
        guard let identifier = query.get("identifier"), Self.isIdentifier(identifier) else {
            throw Refusal(response: JSONError.response(.badRequest, "identifier= must be a product identifier ([A-Za-z0-9._-], 1 to 100)"))
        }
        var days = 30
        if let text = query.get("days") {
            guard let number = Int(text), (1...366).contains(number) else {
                throw Refusal(response: JSONError.response(.badRequest, "days=\(text) must be a whole number from 1 to 366"))
            }
            days = number
        }
        _ = try workflow.appState(app)
        let today = clock().secondsSince1970 / DailyReportCount.secondsPerDay
        let first = today - Int64(days - 1)
        let counts = try await store.dailyCounts(
            app: app, identifier: identifier, since: Timestamp(secondsSince1970: first * DailyReportCount.secondsPerDay))
        let byDay = Dictionary(counts.map { ($0.day, $0.reports) }, uniquingKeysWith: +)
        let answer = DailyReportsAnswer(
            app: app, identifier: identifier,
            days: (first...today).map { day in
                .init(
                    day: String(Timestamp(secondsSince1970: day * DailyReportCount.secondsPerDay).iso8601.prefix(10)),
                    reports: byDay[day] ?? 0)
            })
        return JSONResponse.ok(ServiceJSON.encode(answer))
    }

    func audit(_ request: Request) async throws -> Response {
        let query = request.uri.queryParameters
        let app = query.get("app")
        if let app, let problem = AppName.problem(app) { throw Refusal(response: JSONError.response(.badRequest, problem)) }
        let entries = try await store.auditLog(app: app, limit: try Self.limit(request, default: 100) ?? 100)
        return JSONResponse.ok(String(decoding: try Self.encoder.encode(["entries": entries]), as: UTF8.self))
    }

    static var encoder: JSONEncoder { ServiceJSON.encoder }
}
