import CatalogKit
import Foundation
import HTTPTypes
import Hummingbird
import NIOCore
import PropertyList
import Time

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
    /// The instant customers are read at when the request names none, to the millisecond
    /// (``ServeConfiguration/instant``).
    let instant: @Sendable () -> Date
    /// A customer's full answer (`app`, any key, at an instant), as the purchase endpoints read
    /// it; nil when this server keeps no purchases.
    var customers: (@Sendable (_ app: String, _ id: String, _ at: Date) async -> Response)? = nil
    /// What a customer (`app`, any key) may download at an instant, and why
    /// (``CustomerContentAnswer``); nil when this server keeps no purchases.
    var customerContent: (@Sendable (_ app: String, _ id: String, _ at: Date) async -> Response)? = nil

    /// Request bodies are one product definition: far below this.
    static let maximumBodyBytes = 64 * 1024

    /// A request to one of ``routes``: the token first, then whether its role allows `effect`,
    /// then `handler`, whose errors become answers.
    func respond(
        to call: RouteCall, effect: Effect, _ handler: @Sendable (AdminAPI, AdminCall) async throws -> Response
    ) async -> Response {
        let request = call.request
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
        guard token.role.canUseEditorAPI else {
            return JSONError.response(.forbidden, "token '\(token.name)' is a backend's: it reads customers, not the editor API")
        }
        if effect.changes(dryRun: dryRun) && !token.role.canEdit {
            return JSONError.response(.forbidden, "token '\(token.name)' is a viewer's; changes need an editor's token")
        }
        let app = call.parameters.value("app")
        do {
            return try await handler(self, AdminCall(request: request, parameters: call.parameters, token: token, dryRun: dryRun))
        } catch let refusal as Refusal {
            return refusal.response
        } catch let failure as AuditFailure {
            // Undone: the store is unavailable, try again later. Not undone: a server error.
            return JSONError.response(failure.undoFailure == nil ? .serviceUnavailable : .internalServerError, "\(failure)")
        } catch let error as EditError {
            return response(for: error, app: app)
        } catch let error as HistoryError {
            return response(for: Self.editError(error), app: app)
        } catch {
            return JSONError.response(.internalServerError, "\(error)")
        }
    }

    // MARK: - Customers

    /// `GET /v1/admin/apps/{app}/customers/{id}[?at=]`: what `GET /v1/apps/{app}/customers/{id}`
    /// answers a backend, for an editor's or a viewer's token (the dashboard's customer page); and
    /// `…/customers/{id}/content[?at=]`, what they may download then and why. `read` answers either.
    func customer(
        _ request: Request, app: String, id: String, read: (@Sendable (_ app: String, _ id: String, _ at: Date) async -> Response)?
    ) async -> Response {
        guard let read else { return JSONError.response(.serviceUnavailable, "this server keeps no purchases") }
        let at: Date
        switch PurchaseEndpoints.instant(of: request, default: instant()) {
        case .failure(let refusal): return refusal.response
        case .success(let instant): at = instant
        }
        return await read(app, id, at)
    }

    // MARK: - Tokens

    /// A response that ends a request early.
    struct Refusal: Error {
        var response: Response
    }

    /// The active token named by `Authorization: Bearer …` (RFC 6750).
    func authenticate(_ request: Request) async -> Result<EditorToken, Refusal> {
        await Self.authenticate(request, store: store)
    }

    /// The active token of `store` named by `Authorization: Bearer …`: the editor API's check,
    /// which the customer endpoint shares.
    static func authenticate(_ request: Request, store: any EditorStore) async -> Result<EditorToken, Refusal> {
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

    static func requireIfMatch(_ request: Request) throws -> [String] {
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
    static func readDefinition(_ request: Request) async throws -> PropertyListDictionary {
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

    func response(for error: EditError, app: String?) -> Response {
        switch error.code {
        case .notFound:
            return JSONError.response(.notFound, error.description)
        case .notEditable:
            return JSONError.response(.conflict, error.description)
        case .invalid:
            return JSONError.response(
                .unprocessableContent, error.description, appending: [("diagnostics", DiagnosticAnswer.json(error.diagnostics))])
        case .stale:
            // The current state, so that the editor can merge and retry with its ETag.
            guard let app, let state = try? workflow.appState(app) else {
                return JSONError.response(.preconditionFailed, error.description)
            }
            var response = JSONError.response(.preconditionFailed, error.description, appending: [("current", AppStateAnswer(state).json)])
            response.headers[.eTag] = Self.entityTag(state.sourceRevision)
            return response
        }
    }
}

/// Changes made through the API, one at a time. Each also takes the build lock, which is what
/// keeps them apart from `catalog build` and the feedback loop; queueing them here first means
/// that at most one task blocks on that lock, so concurrent requests never tie up every thread
/// of the cooperative pool waiting for it.
actor ChangeQueue {
    private var busy = false
    private var waiting: [CheckedContinuation<Void, Never>] = []

    /// Runs `body` when no other change is running, waiting for its turn otherwise. A change and
    /// its audit entry (an `await` on the store) run inside one turn: an actor alone would let the
    /// next change in at that `await`.
    func run<T: Sendable>(_ body: @Sendable () async throws -> T) async throws -> T {
        while busy { await withCheckedContinuation { waiting.append($0) } }
        busy = true
        defer {
            busy = false
            if !waiting.isEmpty { waiting.removeFirst().resume() }
        }
        return try await body()
    }
}
