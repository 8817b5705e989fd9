import Content
import FeedSigning
import Foundation
import PropertyList
import Time

/// The editor's commands as functions: validate a catalog directory, build it into `public/`.
/// The CLI only parses arguments and prints what these return.
public struct CatalogWorkflow: Sendable {
    /// The folder of the sources (`catalog/`).
    public var catalogDirectory: URL
    /// How the catalog directory appears in diagnostics (as the editor typed it).
    public var catalogDisplayPath: String
    /// The published tree (`public/`); its records go beside it.
    public var publicDirectory: URL
    /// Bounds on every source and feedback file read.
    public var limits = ReaderLimits()
    /// Signs every feed a publication writes (build, rollback, the editor API, auto-feedback).
    public var signer: FeedSigner?

    /// A workflow on these folders, with the default reader limits and no signer.
    public init(catalogDirectory: URL, catalogDisplayPath: String, publicDirectory: URL) {
        self.catalogDirectory = catalogDirectory
        self.catalogDisplayPath = catalogDisplayPath
        self.publicDirectory = publicDirectory
    }

    /// Every app checked, with all diagnostics of the run sorted by file and position.
    public struct Validation: Sendable {
        /// The apps without errors, with their feedback applied: what a build publishes.
        public var catalogs: [AppCatalog]
        /// Every diagnostic of the run, errors and warnings.
        public var diagnostics: [Diagnostic]
        /// Whether any diagnostic is an error.
        public var hasErrors: Bool { diagnostics.containsErrors }
    }

    /// Loads and checks every app, including the rules that need the publication history.
    /// `overrides` are contents read in place of the files at those URLs (a proposed edit).
    public func validate(overriding overrides: [URL: [UInt8]] = [:]) -> Validation {
        var loader = CatalogLoader(limits: limits)
        for (url, bytes) in overrides { loader.overrides[url.path] = bytes }
        let loaded = loader.load(directory: catalogDirectory, displayPath: catalogDisplayPath)
        var diagnostics = loaded.diagnostics
        var catalogs: [AppCatalog] = []
        let tree = PublicTree(root: publicDirectory)
        let base = catalogDisplayPath.hasSuffix("/") ? String(catalogDisplayPath.dropLast()) : catalogDisplayPath
        let sourceApps = Set(loaded.apps.map(\.app))
        for app in tree.publishedApps() where !sourceApps.contains(app) {
            let revision = (try? tree.currentManifest(app))??.revision ?? 0
            diagnostics.append(
                .error(
                    "app '\(app)' was published (revision \(revision)) but has no sources; App Store identifiers can never disappear, so restore its definitions and mark its products 'retired'",
                    file: "\(base)/\(app)", at: .startOfFile))
        }
        for sources in loaded.apps {
            // The published history is read beside the rules across products, which leave a core
            // idle for a catalog without content: read after them, it was a rebuild's longest
            // stretch on one core (docs/benchmarks.md, "The rebuild's memory").
            let ((checked, found), published) = concurrently(
                { CatalogRules.check(sources) },
                { [tree, app = sources.app] in
                    Result { try tree.currentManifest(app).map { (manifest: $0, history: try tree.history(app, revision: $0.revision)) } }
                })
            diagnostics += found
            guard var catalog = checked, !sources.isIncomplete else { continue }
            do {
                if let (manifest, history) = try published.get() {
                    let problems = HistoryRules.check(
                        catalog, against: history, origin: sources.origin,
                        identifierArray: sources.definitions.contains { $0.isIdentifierArray })
                    diagnostics += problems
                    if problems.containsErrors { continue }
                    catalog.publishedHistory = PublishedHistory(revision: manifest.revision, history: history)
                }
            } catch {
                diagnostics.append(.error("cannot read the published history: \(error)", file: sources.origin, at: .startOfFile))
                continue
            }
            // A feedback file with errors stops the app: ignoring it would put its quarantined
            // identifiers back on sale.
            let feedbackPath = "\(base)/\(FeedbackFile.name(for: catalog.app))"
            let feedback = FeedbackFile.read(feedbackURL(catalog.app), displayPath: feedbackPath, limits: limits)
            diagnostics += feedback.diagnostics
            guard let file = feedback.file else { continue }
            diagnostics += catalog.apply(file, positions: feedback.positions, file: feedbackPath)
            catalogs.append(catalog)
        }
        if loaded.apps.isEmpty && !diagnostics.containsErrors {
            diagnostics.append(
                .warning(
                    "no apps found; add <bundle-id>.plist, <bundle-id>.xml or a <bundle-id>/ folder", file: catalogDisplayPath,
                    at: .startOfFile))
        }
        return Validation(catalogs: catalogs, diagnostics: diagnostics.sorted())
    }

    /// The outcome of a build: diagnostics, and one plan per app (published unless a dry run).
    public struct Build: Sendable {
        /// The validation's diagnostics.
        public var diagnostics: [Diagnostic]
        /// One plan per app, in name order; empty when validation found errors.
        public var plans: [PublicationPlan]
        /// Whether any diagnostic is an error: then nothing was published.
        public var hasErrors: Bool { diagnostics.containsErrors }
        /// Content blobs the build removed because no revision names them (left by a build that
        /// failed before its revision was in place).
        public var prunedBlobs: [ContentDigest] = []
    }

    /// Validates, then publishes each app whose feeds changed, unless any app has errors:
    /// a catalog is published whole or not at all.
    /// `note` records who publishes and why in each new revision's manifest. `validated` is
    /// called with the apps once the catalog has validated without errors, before planning
    /// starts: what the caller will need after publishing can be readied beside it.
    public func build(
        at moment: Timestamp, dryRun: Bool, note: RevisionNote = RevisionNote(), publisher configure: (inout Publisher) -> Void = { _ in },
        validated: (_ apps: [String]) -> Void = { _ in }
    ) throws -> Build {
        let validation = validate()
        guard !validation.hasErrors else { return Build(diagnostics: validation.diagnostics, plans: []) }
        validated(validation.catalogs.map(\.app))
        // A dry run only reads; a build holds the lock from planning to the last manifest.
        let lock = dryRun ? nil : try BuildLock(publicDirectory: publicDirectory)
        defer { withExtendedLifetime(lock) {} }
        let plans = try publish(validation.catalogs, at: moment, dryRun: dryRun, note: note, publisher: configure)
        var build = Build(diagnostics: validation.diagnostics, plans: plans)
        // Under the lock still: no other build is putting blobs meanwhile.
        if !dryRun { build.prunedBlobs = ContentPublishing.pruneBlobs(in: PublicTree(root: publicDirectory), now: Date()) }
        return build
    }

    /// The publisher every path that publishes uses: one place that applies the signer.
    func makePublisher() -> Publisher {
        var publisher = Publisher(publicDirectory: publicDirectory)
        publisher.signer = signer
        return publisher
    }

    /// Plans, then unless a dry run publishes, each of `catalogs`; the caller holds the build
    /// lock when it publishes.
    func publish(
        _ catalogs: [AppCatalog], at moment: Timestamp, dryRun: Bool, note: RevisionNote, publisher configure: (inout Publisher) -> Void
    ) throws -> [PublicationPlan] {
        var publisher = makePublisher()
        configure(&publisher)
        var plans: [PublicationPlan] = []
        for catalog in catalogs {
            let plan = try publisher.plan(catalog, at: moment, note: note)
            if !dryRun { try publisher.publish(plan) }
            plans.append(plan)
        }
        return plans
    }
}
