import Foundation
import PropertyList

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
        guard let verdict = feedback.release(identifier, at: now) else {
            throw ReleaseError(description: "'\(identifier)' is neither quarantined nor suspect in '\(app)'; nothing to release")
        }
        try feedback.write(to: feedbackURL(app))
        return VerdictChange(app: app, identifier: identifier, kind: .released, reason: "was \(verdict.status.rawValue): \(verdict.reason)")
    }

    /// Whether `app` has sources in one of the layouts ``CatalogLoader`` reads.
    private func hasSources(_ app: String) -> Bool {
        ["\(app).plist", "\(app).xml", app].contains {
            FileManager.default.fileExists(atPath: catalogDirectory.appendingPathComponent($0).path)
        }
    }
}
