import CatalogKit
import Foundation
import HTTPTypes
import Hummingbird
import NIOCore
import PropertyList

/// The editor API under `/v1/admin/`: bearer tokens, then the catalog workflow's editing and
/// publishing functions, each change in the audit log.
///
/// The sources stay the truth: every change goes through ``CatalogWorkflow`` into the catalog
/// files, guarded by `If-Match` on the app's source revision, and nothing of the catalog is
/// kept here.
struct AdminAPI: Sendable {
    let store: any CatalogStore
    let workflow: CatalogWorkflow
    let changes = ChangeQueue()
    let clock: @Sendable () -> Timestamp

    /// Request bodies are one product definition: far below this.
    static let maximumBodyBytes = 64 * 1024

    func respond(to request: Request, at route: AdminRoute) async -> Response {
        guard route.allowed.contains(request.method) else {
            if request.method == .delete, case .product = route {
                var response = JSONError.response(
                    .methodNotAllowed, "a product is never deleted: App Store identifiers cannot be reused; POST …/retire to retire it")
                response.headers[.allow] = "PUT"
                return response
            }
            return CatalogResponder.methodNotAllowed(request, allow: route.allowed.map(\.rawValue).joined(separator: ", "))
        }
        let token: EditorToken
        switch await authenticate(request) {
        case .success(let found): token = found
        case .failure(let refusal): return refusal.response
        }
        let dryRun: Bool
        switch request.uri.queryParameters.get("dryRun") {
        case nil, "false", "0": dryRun = false
        case "true", "1": dryRun = true
        case let other?: return JSONError.response(.badRequest, "dryRun=\(other) must be true or false")
        }
        if route.changes(dryRun: dryRun) && !token.role.canEdit {
            return JSONError.response(.forbidden, "token '\(token.name)' is a viewer's; changes need an editor's token")
        }
        do {
            switch route {
            case .apps: return try apps()
            case .app(let app): return try appState(app)
            case .products(let app): return try await edit(request, app: app, actor: token.name) { .create($0) }
            case .product(let app, let id): return try await edit(request, app: app, actor: token.name) { .update(id: id, $0) }
            case .retire(let app, let id): return try await edit(request, app: app, actor: token.name, body: false) { _ in .retire(id: id) }
            case .publish(let app): return try await publish(request, app: app, dryRun: dryRun, actor: token.name)
            case .reports(let app): return try await reports(request, app: app)
            case .dailyReports(let app): return try await dailyReports(request, app: app)
            case .release(let app, let id):
                return try await decide(app: app, id: id, actor: token.name, key: "released") { workflow, now in
                    try workflow.releaseFeedback(app: app, identifier: id, at: now)
                }
            case .quarantine(let app, let id):
                return try await decide(app: app, id: id, actor: token.name, key: "quarantined") { workflow, now in
                    try workflow.confirmQuarantine(app: app, identifier: id, by: token.name, at: now)
                }
            case .revisions(let app): return try revisions(request, app: app)
            case .diff(let app): return try diff(request, app: app)
            case .rollback(let app, let revision): return try await rollback(request, app: app, to: revision, actor: token.name)
            case .audit: return try await audit(request)
            }
        } catch let refusal as Refusal {
            return refusal.response
        } catch let error as EditError {
            return response(for: error, app: route.app)
        } catch let error as HistoryError {
            return response(for: Self.editError(error), app: route.app)
        } catch {
            return JSONError.response(.internalServerError, "\(error)")
        }
    }

    // MARK: - Tokens

    /// A response that ends a request early.
    struct Refusal: Error {
        var response: Response
    }

    /// The active token named by `Authorization: Bearer …` (RFC 6750).
    private func authenticate(_ request: Request) async -> Result<EditorToken, Refusal> {
        func unauthorized(_ message: String, invalid: Bool) -> Refusal {
            var response = JSONError.response(.unauthorized, message)
            response.headers[.wwwAuthenticate] = invalid ? #"Bearer realm="catalog", error="invalid_token""# : #"Bearer realm="catalog""#
            return Refusal(response: response)
        }
        guard let field = request.headers[.authorization] else {
            return .failure(unauthorized("this API needs a token: Authorization: Bearer cat_…", invalid: false))
        }
        let parts = field.split(separator: " ", maxSplits: 1, omittingEmptySubsequences: true)
        guard parts.count == 2, parts[0].lowercased() == "bearer" else {
            return .failure(unauthorized("use Authorization: Bearer cat_…", invalid: false))
        }
        let found: EditorToken?
        do {
            found = try await store.activeToken(secretHash: TokenSecret.hash(String(parts[1])))
        } catch {
            return .failure(Refusal(response: JSONError.response(.serviceUnavailable, "the token store does not answer")))
        }
        guard let token = found else {
            return .failure(unauthorized("the token is unknown or revoked", invalid: true))
        }
        return .success(token)
    }

    // MARK: - Reading

    private func apps() throws -> Response {
        var json = JSONWriter()
        json.beginObject()
        json.key("apps")
        json.beginArray()
        let tree = PublicTree(root: workflow.publicDirectory)
        for app in workflow.sourceApps() {
            guard let revision = try workflow.sourceRevision(app) else { continue }
            json.beginObject()
            json.key("app")
            json.string(app)
            json.key("sourceRevision")
            json.string(revision)
            json.key("publishedRevision")
            if let manifest = try tree.currentManifest(app) { json.integer(Int64(manifest.revision)) } else { json.null() }
            json.endObject()
        }
        json.endArray()
        json.endObject()
        return JSONResponse.ok(String(decoding: json.bytes, as: UTF8.self))
    }

    private func appState(_ app: String) throws -> Response {
        let state = try workflow.appState(app)
        var response = JSONResponse.ok(String(decoding: Self.encode(state), as: UTF8.self))
        response.headers[.eTag] = Self.entityTag(state.sourceRevision)
        return response
    }

    static func entityTag(_ revision: String) -> String { "\"\(revision)\"" }

    static func encode(_ state: CatalogWorkflow.AppState) -> [UInt8] {
        var json = JSONWriter()
        json.beginObject()
        json.key("app")
        json.string(state.app)
        json.key("sourceRevision")
        json.string(state.sourceRevision)
        json.key("files")
        json.beginArray()
        for file in state.files { json.string(file) }
        json.endArray()
        json.key("editable")
        json.boolean(state.notEditable == nil)
        if let reason = state.notEditable {
            json.key("notEditableReason")
            json.string(reason)
        }
        json.key("published")
        if let manifest = state.published {
            json.beginObject()
            json.key("revision")
            json.integer(Int64(manifest.revision))
            json.key("publishedAt")
            json.string(manifest.publishedAt.iso8601)
            json.endObject()
        } else {
            json.null()
        }
        json.key("products")
        json.beginArray()
        for product in state.products { json.raw(FeedRenderer.encode(product, for: .snapshot)) }
        json.endArray()
        json.key("verdicts")
        json.beginObject()
        for (id, verdict) in state.feedback.verdicts.sorted(by: { $0.key < $1.key }) {
            json.key(id)
            json.beginObject()
            json.key("status")
            json.string(verdict.status.rawValue)
            json.key("reason")
            json.string(verdict.reason)
            json.key("since")
            json.string(verdict.since.iso8601)
            json.endObject()
        }
        json.endObject()
        json.key("diagnostics")
        writeDiagnostics(state.diagnostics, to: &json)
        json.endObject()
        return json.bytes
    }

    static func writeDiagnostics(_ diagnostics: [Diagnostic], to json: inout JSONWriter) {
        json.beginArray()
        for diagnostic in diagnostics {
            json.beginObject()
            json.key("severity")
            json.string(diagnostic.severity.rawValue)
            json.key("file")
            json.string(diagnostic.file)
            json.key("line")
            json.integer(Int64(diagnostic.position.line))
            json.key("column")
            json.integer(Int64(diagnostic.position.column))
            json.key("message")
            json.string(diagnostic.message)
            json.key("text")
            json.string(diagnostic.description)
            json.endObject()
        }
        json.endArray()
    }

    private func reports(_ request: Request, app: String) async throws -> Response {
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
    private func dailyReports(_ request: Request, app: String) async throws -> Response {
        let query = request.uri.queryParameters
        guard let identifier = query.get("identifier"), AdminRoute.isIdentifier(identifier) else {
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
        var json = JSONWriter()
        json.beginObject()
        json.key("app")
        json.string(app)
        json.key("identifier")
        json.string(identifier)
        json.key("days")
        json.beginArray()
        for day in first...today {
            json.beginObject()
            json.key("day")
            json.string(String(Timestamp(secondsSince1970: day * DailyReportCount.secondsPerDay).iso8601.prefix(10)))
            json.key("reports")
            json.integer(Int64(byDay[day] ?? 0))
            json.endObject()
        }
        json.endArray()
        json.endObject()
        return JSONResponse.ok(String(decoding: json.bytes, as: UTF8.self))
    }

    private func audit(_ request: Request) async throws -> Response {
        let query = request.uri.queryParameters
        let app = query.get("app")
        if let app, let problem = AppName.problem(app) { throw Refusal(response: JSONError.response(.badRequest, problem)) }
        let entries = try await store.auditLog(app: app, limit: try Self.limit(request, default: 100) ?? 100)
        return JSONResponse.ok(String(decoding: try Self.encoder.encode(["entries": entries]), as: UTF8.self))
    }

    static var encoder: JSONEncoder {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return encoder
    }

    // MARK: - Changing

    /// A product change: If-Match first (428 without), then the body, then the workflow under
    /// the change queue, then the audit log.
    private func edit(
        _ request: Request, app: String, actor: String, body: Bool = true,
        _ make: @escaping @Sendable (PropertyListDictionary) -> ProductEdit
    ) async throws -> Response {
        let ifMatch = try Self.requireIfMatch(request)
        var definition = PropertyListDictionary()
        if body { definition = try await Self.readDefinition(request) }
        let edit = make(definition)
        let workflow = self.workflow
        let result = try await changes.run {
            try workflow.edit(app: app, edit, expected: { IfMatch.evaluate(ifMatch, current: Self.entityTag($0)) == .matches })
        }
        try await store.appendAudit(
            AuditEntry(
                at: clock(), actor: actor, action: .edit, app: app, summary: result.summary,
                beforeHash: result.before,
                afterHash: result.after))
        var json = JSONWriter()
        json.beginObject()
        json.key("product")
        json.raw(FeedRenderer.encode(result.product, for: .snapshot))
        json.key("file")
        json.string(result.file)
        json.key("sourceRevision")
        json.string(result.after)
        json.endObject()
        var response = JSONResponse.ok(String(decoding: json.bytes, as: UTF8.self))
        if case .create = edit { response.status = .created }
        response.headers[.eTag] = Self.entityTag(result.after)
        return response
    }

    private func publish(_ request: Request, app: String, dryRun: Bool, actor: String) async throws -> Response {
        // A preview changes nothing and needs no guard; a publication does.
        let ifMatch = try dryRun ? request.headers[values: .ifMatch] : Self.requireIfMatch(request)
        let message = request.uri.queryParameters.get("message").map { String($0) }
        let workflow = self.workflow
        let now = clock()
        let publication = try await changes.run {
            try workflow.publish(
                app: app, expected: ifMatch.isEmpty ? nil : { IfMatch.evaluate(ifMatch, current: Self.entityTag($0)) == .matches },
                dryRun: dryRun, at: now, note: RevisionNote(author: actor, message: message))
        }
        let plan = publication.plan
        if !dryRun && !plan.isUnchanged {
            try await store.appendAudit(
                .publication(
                    plan, actor: actor, at: now,
                    manifestBefore: publication.manifestBefore, tree: PublicTree(root: workflow.publicDirectory)))
        }
        var json = JSONWriter()
        json.beginObject()
        json.key("app")
        json.string(app)
        json.key("dryRun")
        json.boolean(dryRun)
        json.key("unchanged")
        json.boolean(plan.isUnchanged)
        json.key("revision")
        json.integer(Int64(plan.revision))
        json.key("diff")
        Self.write(plan.diff, to: &json)
        json.key("sourceRevision")
        json.string(publication.after)
        json.endObject()
        var response = JSONResponse.ok(String(decoding: json.bytes, as: UTF8.self))
        response.headers[.eTag] = Self.entityTag(publication.after)
        return response
    }

    /// A product diff as JSON: what `catalog diff` and `build --dry-run` print.
    static func write(_ diff: ProductDiff, to json: inout JSONWriter) {
        json.beginObject()
        for (key, ids) in [("added", diff.added), ("removed", diff.removed), ("released", diff.released)] {
            json.key(key)
            json.beginArray()
            for id in ids { json.string(id) }
            json.endArray()
        }
        json.key("changed")
        json.beginArray()
        for change in diff.changed {
            json.beginObject()
            json.key("id")
            json.string(change.id)
            json.key("details")
            json.beginArray()
            for detail in change.details { json.string(detail) }
            json.endArray()
            json.endObject()
        }
        json.endArray()
        json.key("quarantined")
        json.beginArray()
        for quarantine in diff.quarantined {
            json.beginObject()
            json.key("id")
            json.string(quarantine.id)
            json.key("reason")
            json.string(quarantine.reason)
            json.endObject()
        }
        json.endArray()
        json.endObject()
    }

    /// An editor's decision on one identifier's verdict (a release, or a confirmed quarantine),
    /// audited; answers `{"<key>": id, "summary": …, "sourceRevision": …}`.
    private func decide(
        app: String, id: String, actor: String, key: String,
        _ decision: @escaping @Sendable (CatalogWorkflow, Timestamp) throws -> VerdictChange
    ) async throws -> Response {
        let workflow = self.workflow
        let now = clock()
        let (change, before, after) = try await changes.run {
            guard let before = try workflow.sourceRevision(app) else { throw EditError(.notFound, "unknown app '\(app)'") }
            do {
                let change = try decision(workflow, now)
                return (change, before, try workflow.sourceRevision(app) ?? before)
            } catch let error as CatalogWorkflow.ReleaseError {
                // A feedback file with errors, or an identifier with no verdict to decide on.
                throw EditError(error.diagnostics.isEmpty ? .notFound : .invalid, error.description, diagnostics: error.diagnostics)
            }
        }
        for var entry in AuditEntry.feedback([change], actor: actor, at: now) {
            (entry.beforeHash, entry.afterHash) = (before, after)
            try await store.appendAudit(entry)
        }
        var json = JSONWriter()
        json.beginObject()
        json.key(key)
        json.string(id)
        json.key("summary")
        json.string(change.description)
        json.key("sourceRevision")
        json.string(after)
        json.endObject()
        var response = JSONResponse.ok(String(decoding: json.bytes, as: UTF8.self))
        response.headers[.eTag] = Self.entityTag(after)
        return response
    }

    // MARK: - History

    private func revisions(_ request: Request, app: String) throws -> Response {
        let limit = try Self.limit(request, default: nil)
        let summaries = try workflow.history(app: app, limit: limit)
        return JSONResponse.ok(String(decoding: try Self.encoder.encode(RevisionList(app: app, revisions: summaries)), as: UTF8.self))
    }

    private struct RevisionList: Encodable {
        var app: String
        var revisions: [RevisionSummary]
    }

    private func diff(_ request: Request, app: String) throws -> Response {
        let query = request.uri.queryParameters
        func revision(_ name: String) throws -> Int? {
            guard let text = query.get(name) else { return nil }
            guard let number = Int(text), number > 0 else {
                throw Refusal(response: JSONError.response(.badRequest, "\(name)=\(text) must be a revision number"))
            }
            return number
        }
        let (from, to) = (try revision("from"), try revision("to"))
        let result: (from: CatalogWorkflow.DiffSide?, to: CatalogWorkflow.DiffSide, diff: ProductDiff)
        if let to, from == nil {
            // `to` alone: what that revision changed; the first one added everything.
            if to > 1 {
                result = (.revision(to - 1), .revision(to), try workflow.diff(app: app, from: to - 1, to: to, at: clock()).diff)
            } else {
                _ = try workflow.history(app: app, limit: 1)
                let first = try PublicTree(root: workflow.publicDirectory).productSnapshot(app, revision: 1)
                result = (nil, .revision(1), try ProductDiff(old: [], new: first))
            }
        } else {
            let found = try workflow.diff(app: app, from: from, to: to, at: clock())
            result = (found.from, found.to, found.diff)
        }
        var json = JSONWriter()
        json.beginObject()
        json.key("app")
        json.string(app)
        for (key, side) in [("from", result.from), ("to", result.to)] {
            json.key(key)
            switch side {
            case .revision(let number)?: json.integer(Int64(number))
            case .sources?: json.string("sources")
            case nil: json.null()
            }
        }
        json.key("diff")
        Self.write(result.diff, to: &json)
        json.endObject()
        return JSONResponse.ok(String(decoding: json.bytes, as: UTF8.self))
    }

    /// Republishes an old revision's content as a new one and writes it into the sources, as
    /// `catalog rollback` does. The If-Match check runs in the change queue, just before the
    /// rollback takes the build lock: API changes cannot slip in between, a command-line build could.
    private func rollback(_ request: Request, app: String, to revision: Int, actor: String) async throws -> Response {
        let ifMatch = try Self.requireIfMatch(request)
        let message = request.uri.queryParameters.get("message").map { String($0) }
        let workflow = self.workflow
        let now = clock()
        let tree = PublicTree(root: workflow.publicDirectory)
        let (rollback, manifestBefore, after) = try await changes.run {
            guard let before = try workflow.sourceRevision(app) else { throw EditError(.notFound, "unknown app '\(app)'") }
            guard IfMatch.evaluate(ifMatch, current: Self.entityTag(before)) == .matches else {
                throw EditError(.stale, "'\(app)' changed since you read it: edited, released or published meanwhile")
            }
            let manifestBefore = tree.currentManifestHash(app)
            let rollback = try workflow.rollback(app: app, to: revision, at: now, author: actor, message: message)
            return (rollback, manifestBefore, try workflow.sourceRevision(app) ?? before)
        }
        let plan = rollback.plan
        try await store.appendAudit(
            .publication(
                plan, rolledBackTo: revision, actor: actor, at: now, manifestBefore: manifestBefore, tree: tree))
        var json = JSONWriter()
        json.beginObject()
        json.key("app")
        json.string(app)
        json.key("restored")
        json.integer(Int64(revision))
        json.key("revision")
        json.integer(Int64(plan.revision))
        json.key("unchanged")
        json.boolean(plan.isUnchanged)
        json.key("written")
        json.string(rollback.written)
        for (key, values) in [("removed", rollback.removed), ("keptRetired", rollback.keptRetired)] {
            json.key(key)
            json.beginArray()
            for value in values { json.string(value) }
            json.endArray()
        }
        json.key("diff")
        Self.write(plan.diff, to: &json)
        json.key("sourceRevision")
        json.string(after)
        json.endObject()
        var response = JSONResponse.ok(String(decoding: json.bytes, as: UTF8.self))
        response.headers[.eTag] = Self.entityTag(after)
        return response
    }

    /// A missing app or revision is a 404, sources with errors a 422, the rest (a revision that
    /// cannot be restored exactly) a 409.
    static func editError(_ error: HistoryError) -> EditError {
        if !error.diagnostics.isEmpty { return EditError(.invalid, error.description, diagnostics: error.diagnostics) }
        return EditError(error.isMissing ? .notFound : .notEditable, error.description)
    }

    // MARK: - Requests and errors

    /// `?limit=`, from 1 to 1000.
    static func limit(_ request: Request, default value: Int?) throws -> Int? {
        guard let text = request.uri.queryParameters.get("limit") else { return value }
        guard let number = Int(text), (1...1000).contains(number) else {
            throw Refusal(response: JSONError.response(.badRequest, "limit=\(text) must be a whole number from 1 to 1000"))
        }
        return number
    }

    /// `?offset=`: how many of the most affected to skip.
    static func offset(_ request: Request) throws -> Int {
        guard let text = request.uri.queryParameters.get("offset") else { return 0 }
        guard let number = Int(text), (0...Int(Int32.max)).contains(number) else {
            throw Refusal(response: JSONError.response(.badRequest, "offset=\(text) must be a whole number, 0 or more"))
        }
        return number
    }

    private static func requireIfMatch(_ request: Request) throws -> [String] {
        let lines = request.headers[values: .ifMatch]
        guard !lines.isEmpty else {
            throw Refusal(
                response: JSONError.response(
                    .preconditionRequired,
                    "send If-Match with the app's ETag (GET /v1/admin/apps/{app}) so that no one else's change is overwritten"))
        }
        return lines
    }

    /// The body as a product definition: JSON, at most ``maximumBodyBytes``.
    private static func readDefinition(_ request: Request) async throws -> PropertyListDictionary {
        guard ReportIntake.isJSON(request.headers[.contentType]) else {
            throw Refusal(response: JSONError.response(.unsupportedMediaType, "send the product as Content-Type: application/json"))
        }
        if let length = request.headers[.contentLength].flatMap(Int.init), length > maximumBodyBytes {
            var response = JSONError.response(.contentTooLarge, "the body is \(length) bytes; the limit is \(maximumBodyBytes)")
            response.headers[.connection] = "close"
            throw Refusal(response: response)
        }
        let body: ByteBuffer
        do {
            body = try await request.body.collect(upTo: maximumBodyBytes)
        } catch is NIOTooManyBytesError {
            var response = JSONError.response(.contentTooLarge, "the body is larger than \(maximumBodyBytes) bytes")
            response.headers[.connection] = "close"
            throw Refusal(response: response)
        }
        do {
            return try ProductJSON.definition(Array(body.readableBytesView))
        } catch {
            throw Refusal(response: JSONError.response(.badRequest, error.description))
        }
    }

    private func response(for error: EditError, app: String?) -> Response {
        switch error.code {
        case .notFound:
            return JSONError.response(.notFound, error.description)
        case .notEditable:
            return JSONError.response(.conflict, error.description)
        case .invalid:
            return JSONError.response(.unprocessableContent, error.description) { json in
                json.key("diagnostics")
                Self.writeDiagnostics(error.diagnostics, to: &json)
            }
        case .stale:
            // The current state, so that the editor can merge and retry with its ETag.
            guard let app, let state = try? workflow.appState(app) else {
                return JSONError.response(.preconditionFailed, error.description)
            }
            var response = JSONError.response(.preconditionFailed, error.description) { json in
                json.key("current")
                json.raw(Self.encode(state))
            }
            response.headers[.eTag] = Self.entityTag(state.sourceRevision)
            return response
        }
    }
}

extension AdminRoute {
    var app: String? {
        switch self {
        case .apps, .audit: nil
        case .app(let app), .products(let app), .publish(let app), .reports(let app), .dailyReports(let app): app
        case .product(let app, _), .retire(let app, _), .release(let app, _), .quarantine(let app, _): app
        case .revisions(let app), .diff(let app), .rollback(let app, _): app
        }
    }
}

/// Changes made through the API, one at a time. Each also takes the build lock, which is what
/// keeps them apart from `catalog build` and the feedback loop; queueing them here first means
/// that at most one task blocks on that lock, so concurrent requests never tie up every thread
/// of the cooperative pool waiting for it.
actor ChangeQueue {
    func run<T: Sendable>(_ body: @Sendable () throws -> T) throws -> T {
        try body()
    }
}
