import Foundation
import PropertyList
import Time

/// `catalog feedback` and `catalog feedback release` as functions, for the CLI and for
/// `catalog serve --auto-feedback`.
///
/// Both hold the build lock of the published tree while they read and write feedback files, so
/// that a scheduled run never overwrites an editor's release made in between, and a build never
/// reads a half-judged catalog.
extension CatalogWorkflow {
    /// Where `app`'s feedback file is.
    public func feedbackURL(_ app: String) -> URL {
        catalogDirectory.appendingPathComponent(FeedbackFile.name(for: app))
    }

    /// The outcome of a feedback run.
    public struct FeedbackRun: Sendable {
        /// Problems in the sources or feedback files; an app with errors is not judged.
        public var diagnostics: [Diagnostic]
        /// Every verdict whose status changed, by app, then identifier.
        public var changes: [VerdictChange]
        /// The apps whose feedback files were written.
        public var written: [String]
        /// The apps judged, in name order.
        public var apps: [String] = []
        /// The alerts the apps have after this run, by app (docs/feedback.md, "Store-wide failures").
        public var alerts: [String: AppAlert] = [:]
        /// Whether any diagnostic is an error.
        public var hasErrors: Bool { diagnostics.containsErrors }
    }

    /// Applies each app's policy to the reports in `store` and writes the feedback files that
    /// changed. A build afterwards publishes the quarantines. Waits (blocking, as a build does)
    /// while a build or another feedback run holds the lock.
    public func runFeedback(store: any ReportStore, at now: Timestamp) async throws -> FeedbackRun {
        let lock = try BuildLock(publicDirectory: publicDirectory)
        defer { withExtendedLifetime(lock) {} }
        let judged = try await judgeFeedback(store: store, at: now)
        var run = FeedbackRun(diagnostics: judged.diagnostics, changes: [], written: [])
        for (app, verdicts) in judged.apps {
            run.changes += verdicts.changes
            run.apps.append(app)
            run.alerts[app] = verdicts.feedback.alert
            if try verdicts.feedback.write(to: feedbackURL(app)) { run.written.append(app) }
        }
        return run
    }

    /// Each app's verdicts at `now`, by app in name order, without writing anything: what
    /// `catalog reports` shows and what `runFeedback` writes.
    public func judgeFeedback(
        store: any ReportStore, at now: Timestamp
    ) async throws -> (diagnostics: [Diagnostic], apps: [(app: String, verdicts: (feedback: FeedbackFile, changes: [VerdictChange]))]) {
        let validation = validate()
        let tree = PublicTree(root: publicDirectory)
        var apps: [(app: String, verdicts: (feedback: FeedbackFile, changes: [VerdictChange]))] = []
        for catalog in validation.catalogs {
            let history = try tree.currentManifest(catalog.app).map { try tree.history(catalog.app, revision: $0.revision) }
            apps.append((catalog.app, try await FeedbackLoop.evaluate(catalog, history: history, store: store, at: now)))
        }
        return (validation.diagnostics, apps)
    }

    /// Why `catalog feedback release` could not release an identifier.
    public struct ReleaseError: DiagnosedError, CustomStringConvertible {
        public var description: String
        /// Problems in the feedback file, which is left as it is.
        public var diagnostics: [Diagnostic] = []
    }

    /// Clears `identifier`'s verdict in `app`'s feedback file and records when, so that reports
    /// before now no longer count. The next build offers it again.
    public func releaseFeedback(app: String, identifier: String, at now: Timestamp) throws -> VerdictChange {
        try editFeedback(app) { feedback in
            guard let verdict = feedback.release(identifier, at: now) else {
                throw ReleaseError(description: "'\(identifier)' is neither quarantined nor suspect in '\(app)'; nothing to release")
            }
            return VerdictChange(
                app: app, identifier: identifier, kind: .released, reason: "was \(verdict.status.rawValue): \(verdict.reason)")
        }
    }

    /// Quarantines `identifier` by `editor`'s decision: how an identifier past the quarantine
    /// budget, or held back by a store-wide alert, goes off sale. Only an identifier the app
    /// sells can be confirmed; the next build takes it off sale.
    public func confirmQuarantine(app: String, identifier: String, by editor: String, at now: Timestamp) throws -> VerdictChange {
        return try editFeedback(app) { feedback in
            if feedback.verdicts[identifier]?.status == .quarantined {
                throw ReleaseError(description: "'\(identifier)' is already quarantined in '\(app)'")
            }
            // Read under the lock, as the feedback file is: the sources cannot change in between.
            let products = validate().catalogs.first { $0.app == app }?.products ?? []
            guard products.contains(where: { $0.id == identifier && $0.status == .cleared }) else {
                throw ReleaseError(
                    description: "'\(identifier)' is not a cleared product of '\(app)'; only what is on sale can be quarantined")
            }
            _ = feedback.confirmQuarantine(identifier, by: editor, at: now)
            return VerdictChange(app: app, identifier: identifier, kind: .quarantined, reason: feedback.verdicts[identifier]?.reason)
        }
    }

    /// Reads `app`'s feedback file under the build lock, lets `change` edit it, and writes it.
    private func editFeedback(_ app: String, _ change: (inout FeedbackFile) throws -> VerdictChange) throws -> VerdictChange {
        if let problem = AppName.problem(app) { throw ReleaseError(description: problem) }
        guard hasSources(app) else {
            throw ReleaseError(description: "unknown app '\(app)': no \(app).plist, \(app).xml or \(app)/ in \(catalogDisplayPath)")
        }
        let lock = try BuildLock(publicDirectory: publicDirectory)
        defer { withExtendedLifetime(lock) {} }
        let base = catalogDisplayPath.hasSuffix("/") ? String(catalogDisplayPath.dropLast()) : catalogDisplayPath
        let read = FeedbackFile.read(feedbackURL(app), displayPath: "\(base)/\(FeedbackFile.name(for: app))", limits: limits)
        guard var feedback = read.file else {
            throw ReleaseError(description: "the feedback file of '\(app)' has errors; fix them first", diagnostics: read.diagnostics)
        }
        let outcome = try change(&feedback)
        try feedback.write(to: feedbackURL(app))
        return outcome
    }

    /// Whether `app` has sources in one of the layouts ``CatalogLoader`` reads.
    private func hasSources(_ app: String) -> Bool {
        ["\(app).plist", "\(app).xml", app].contains {
            FileManager.default.fileExists(atPath: catalogDirectory.appendingPathComponent($0).path)
        }
    }
}
