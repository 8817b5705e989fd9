import CatalogKit
import Foundation
import HTTPSemantics
import HTTPTypes
import Hummingbird
import NIOCore

/// History: revisions, diffs and rollback.
extension AdminAPI {
    func revisions(_ request: Request, app: String) throws -> Response {
        let limit = try Self.limit(request, default: nil)
        let summaries = try workflow.history(app: app, limit: limit)
        return JSONResponse.ok(String(decoding: try Self.encoder.encode(RevisionList(app: app, revisions: summaries)), as: UTF8.self))
    }

    struct RevisionList: Encodable {
        var app: String
        var revisions: [RevisionSummary]
    }

    func diff(_ request: Request, app: String) throws -> Response {
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
        let answer = HistoryDiffAnswer(app: app, from: result.from, to: result.to, diff: DiffAnswer(result.diff))
        return JSONResponse.ok(ServiceJSON.encode(answer))
    }

    /// Republishes an old revision's content as a new one and writes it into the sources, as
    /// `catalog rollback` does. The If-Match check runs in the change queue, just before the
    /// rollback takes the build lock: API changes cannot slip in between, a command-line build could.
    func rollback(_ request: Request, app: String, to revision: Int, actor: String) async throws -> Response {
        let ifMatch = try Self.requireIfMatch(request)
        let message = request.uri.queryParameters.get("message").map { String($0) }
        let workflow = self.workflow
        let now = clock()
        let tree = PublicTree(root: workflow.publicDirectory)
        let store = self.store
        let (rollback, _, after) = try await changes.run {
            try await audited(ChangeUndo.publication(of: app, in: workflow)) {
                guard let before = try workflow.sourceRevision(app) else { throw EditError(.notFound, "unknown app '\(app)'") }
                guard IfMatch.evaluate(ifMatch, current: Self.entityTag(before)) == .matches else {
                    throw EditError(.stale, "'\(app)' changed since you read it: edited, released or published meanwhile")
                }
                let manifestBefore = tree.currentManifestHash(app)
                let rollback = try workflow.rollback(app: app, to: revision, at: now, author: actor, message: message)
                return (rollback, manifestBefore, try workflow.sourceRevision(app) ?? before)
            } audit: { (rollback, manifestBefore, _) in
                try await store.recordPublication(
                    .publication(rollback.plan, rolledBackTo: revision, actor: actor, at: now, manifestBefore: manifestBefore, tree: tree),
                    app: app, tree: tree)
            }
        }
        let plan = rollback.plan
        let answer = RollbackAnswer(
            app: app, restored: revision, revision: plan.revision, unchanged: plan.isUnchanged, written: rollback.written,
            removed: rollback.removed, keptRetired: rollback.keptRetired, diff: DiffAnswer(plan.diff), sourceRevision: after)
        var response = JSONResponse.ok(ServiceJSON.encode(answer))
        response.headers[.eTag] = Self.entityTag(after)
        return response
    }

    /// A missing app or revision is a 404, sources with errors a 422, the rest (a revision that
    /// cannot be restored exactly) a 409.
    static func editError(_ error: HistoryError) -> EditError {
        if !error.diagnostics.isEmpty { return EditError(.invalid, error.description, diagnostics: error.diagnostics) }
        return EditError(error.isMissing ? .notFound : .notEditable, error.description)
    }
}
