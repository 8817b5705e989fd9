import CatalogKit
import Foundation
import HTTPSemantics
import HTTPTypes
import Hummingbird
import NIOCore
import PropertyList
import Time

/// Changing: product edits and publishing, each guarded by If-Match and audited.
extension AdminAPI {
    /// A product change: If-Match first (428 without), then the body, then the workflow under
    /// the change queue, then the audit log, in the same turn of the queue: a failed audit write
    /// undoes the change (503).
    func edit(
        _ request: Request, app: String, actor: String, body: Bool = true,
        _ make: @escaping @Sendable (PropertyListDictionary) -> ProductEdit
    ) async throws -> Response {
        let ifMatch = try Self.requireIfMatch(request)
        var definition = PropertyListDictionary()
        if body { definition = try await Self.readDefinition(request) }
        let edit = make(definition)
        let workflow = self.workflow
        let (store, clock) = (self.store, self.clock)
        let result = try await changes.run {
            try await audited(ChangeUndo.sources(of: app, in: workflow)) {
                try workflow.edit(app: app, edit, expected: { IfMatch.evaluate(ifMatch, current: Self.entityTag($0)) == .matches })
            } audit: { result in
                try await store.appendAudit(
                    AuditEntry(
                        at: clock(), actor: actor, action: .edit, app: app, summary: result.summary, beforeHash: result.before,
                        afterHash: result.after))
            }
        }
        let answer = EditAnswer(product: result.product, file: result.file, sourceRevision: result.after)
        var response = JSONResponse.ok(answer.json)
        if case .create = edit { response.status = .created }
        response.headers[.eTag] = Self.entityTag(result.after)
        return response
    }

    func publish(_ request: Request, app: String, dryRun: Bool, actor: String) async throws -> Response {
        // A preview changes nothing and needs no guard; a publication does.
        let ifMatch = try dryRun ? request.headers[values: .ifMatch] : Self.requireIfMatch(request)
        let message = request.uri.queryParameters.get("message").map { String($0) }
        let workflow = self.workflow
        let now = clock()
        let store = self.store
        let publication = try await changes.run {
            // A preview writes nothing; it needs neither an undo nor an entry.
            try await audited(dryRun ? ChangeUndo() : ChangeUndo.publication(of: app, in: workflow)) {
                try workflow.publish(
                    app: app, expected: ifMatch.isEmpty ? nil : { IfMatch.evaluate(ifMatch, current: Self.entityTag($0)) == .matches },
                    dryRun: dryRun, at: now, note: RevisionNote(author: actor, message: message))
            } audit: { publication in
                guard !dryRun && !publication.plan.isUnchanged else { return }
                let tree = PublicTree(root: workflow.publicDirectory)
                try await store.recordPublication(
                    .publication(publication.plan, actor: actor, at: now, manifestBefore: publication.manifestBefore, tree: tree),
                    app: app, tree: tree)
            }
        }
        let plan = publication.plan
        let answer = PublicationAnswer(
            app: app, dryRun: dryRun, unchanged: plan.isUnchanged, revision: plan.revision, diff: DiffAnswer(plan.diff),
            sourceRevision: publication.after)
        var response = JSONResponse.ok(ServiceJSON.encode(answer))
        response.headers[.eTag] = Self.entityTag(publication.after)
        return response
    }

    /// An editor's decision on one identifier's verdict (a release, or a confirmed quarantine),
    /// audited in the same turn of the change queue (a failed audit write undoes it); answers `{"<decision>": id, "summary": …, "sourceRevision": …}`.
    func decide(
        app: String, id: String, actor: String, key: DecisionAnswer.Decision,
        _ decision: @escaping @Sendable (CatalogWorkflow, Timestamp) throws -> VerdictChange
    ) async throws -> Response {
        let workflow = self.workflow
        let store = self.store
        let now = clock()
        let (change, _, after) = try await changes.run {
            try await audited(ChangeUndo.sources(of: app, in: workflow)) {
                guard let before = try workflow.sourceRevision(app) else { throw EditError(.notFound, "unknown app '\(app)'") }
                do {
                    let change = try decision(workflow, now)
                    return (change, before, try workflow.sourceRevision(app) ?? before)
                } catch let error as CatalogWorkflow.ReleaseError {
                    // A feedback file with errors, or an identifier with no verdict to decide on.
                    throw EditError(error.diagnostics.isEmpty ? .notFound : .invalid, error.description, diagnostics: error.diagnostics)
                }
            } audit: { (change, before, after) in
                for var entry in AuditEntry.feedback([change], actor: actor, at: now) {
                    (entry.beforeHash, entry.afterHash) = (before, after)
                    try await store.appendAudit(entry)
                }
            }
        }
        let answer = DecisionAnswer(decision: key, id: id, summary: change.description, sourceRevision: after)
        var response = JSONResponse.ok(ServiceJSON.encode(answer))
        response.headers[.eTag] = Self.entityTag(after)
        return response
    }
}
