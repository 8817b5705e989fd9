import CatalogKit
import CatalogTestSupport
import Foundation
import Testing

/// The feedback loop from reports to published feeds: `runFeedback` against a store, the
/// feedback file it writes, and builds that honour it.
@Suite struct FeedbackLoopTests {
    static let app = "com.example.app"
    /// The seed catalog is first published at `buildMoment`: its grace period ends 48 h later.
    static let graceEnd = buildMoment.adding(48 * 3600)
    static let reason = "reported invalid by 20 production installs from 20 networks in the last 24 h, invalid rate 1.0"

    /// A fresh catalog with the seed example published at `buildMoment`.
    static func withPublishedSeed(_ body: (TemporaryCatalog) async throws -> Void) async throws {
        let catalog = try TemporaryCatalog()
        defer { catalog.cleanUp() }
        try catalog.write("com.example.app.plist", seedCatalog)
        _ = try catalog.build(at: buildMoment)
        try await body(catalog)
    }

    static func feedback(_ catalog: TemporaryCatalog) -> FeedbackFile? {
        FeedbackFile.read(catalog.workflow.feedbackURL(app), displayPath: "feedback").file
    }

    // MARK: - Building with a feedback file

    @Test func buildLeavesQuarantinedOutAndListsThemAsKnown() throws {
        try withCatalog { catalog in
            try catalog.write("com.example.app.plist", seedCatalog)
            try catalog.publish(at: buildMoment)
            let verdict = Verdict(status: .quarantined, reason: Self.reason, since: buildMoment.adding(3600))
            try FeedbackFile(verdicts: ["com.example.level2": verdict]).write(to: catalog.workflow.feedbackURL(Self.app))

            let quarantined = try #require(try catalog.publish(at: buildMoment.adding(7200)).first)
            #expect(quarantined.revision == 2, "a quarantine is a content change")
            #expect(quarantined.feedbackChanges.map(\.description) == ["com.example.app: quarantined com.example.level2 (\(Self.reason))"])
            #expect(quarantined.diff.changed.isEmpty, "a verdict is not an edit")
            #expect(quarantined.diff.quarantined == [ProductDiff.Quarantine(id: "com.example.level2", reason: Self.reason)])
            #expect(text(catalog.published("v1/apps/com.example.app/products.json")) == #"["com.example.level1","com.example.rocket_car"]"#)
            #expect(
                text(catalog.published("v1/apps/com.example.app/catalog.json"))
                    == #"{"app":"com.example.app","revision":2,"publishedAt":"2026-03-01T14:00:00Z","products":[{"id":"com.example.level1"},{"id":"com.example.rocket_car"}],"known":[{"id":"com.example.level2","status":"quarantined","reason":"reported invalid by 20 production installs from 20 networks in the last 24 h, invalid rate 1.0"}]}"#
            )
            #expect(try catalog.tree.currentManifest(Self.app)?.quarantined == ["com.example.level2"])

            let again = try #require(try catalog.publish(at: buildMoment.adding(7300)).first)
            #expect(again.isUnchanged && again.feedbackChanges.isEmpty, "a held quarantine publishes nothing new")

            let release = try catalog.workflow.releaseFeedback(
                app: Self.app, identifier: "com.example.level2", at: buildMoment.adding(7400))
            #expect(release.description == "com.example.app: released com.example.level2 (was quarantined: \(Self.reason))")
            let released = try #require(try catalog.publish(at: buildMoment.adding(7500)).first)
            #expect(released.revision == 3)
            #expect(released.feedbackChanges.map(\.description) == ["com.example.app: released com.example.level2"])
            #expect(text(catalog.published("v1/apps/com.example.app/products.json")) == seedProductsJSON)
            #expect(try catalog.tree.currentManifest(Self.app)?.quarantined == nil)
            #expect(Self.feedback(catalog)?.released == ["com.example.level2": buildMoment.adding(7400)])
        }
    }

    /// Only products on sale are taken off sale; a stale quarantine is pointed at.
    @Test func quarantineOfAnIdentifierNotInTheSourcesIsAWarning() throws {
        try withCatalog { catalog in
            try catalog.write("com.example.app.plist", seedCatalog)
            let verdict = Verdict(status: .quarantined, reason: Self.reason, since: buildMoment)
            try FeedbackFile(verdicts: ["com.example.gone": verdict]).write(to: catalog.workflow.feedbackURL(Self.app))
            #expect(
                catalog.diagnostics() == [
                    "catalog/com.example.app.feedback.plist:8:3: warning: quarantined identifier 'com.example.gone' is not in the sources of 'com.example.app'; release it with 'catalog feedback release com.example.app com.example.gone'"
                ])
            let plan = try #require(try catalog.publish(at: buildMoment).first)
            #expect(plan.feedbackChanges.isEmpty)
            #expect(text(catalog.published("v1/apps/com.example.app/products.json")) == seedProductsJSON)
        }
    }

    /// Ignoring a broken feedback file would put its quarantined identifiers back on sale.
    @Test func malformedFeedbackFileStopsTheBuild() throws {
        try withCatalog { catalog in
            try catalog.write("com.example.app.plist", seedCatalog)
            try catalog.write("com.example.app.feedback.plist", plist("<array/>"))
            let build = try catalog.build(at: buildMoment)
            #expect(
                build.diagnostics.map(\.description) == [
                    "catalog/com.example.app.feedback.plist:4:1: error: the root must be a <dict>, found <array>"
                ])
            #expect(build.plans.isEmpty)
            #expect(catalog.tree.publishedApps() == [])
        }
    }

    // MARK: - Running the loop against a store

    @Test func reportsAfterGraceQuarantineAndTheFileIsByteStable() async throws {
        try await Self.withPublishedSeed { catalog in
            let store = try await catalog.reportStore(invalidReports("com.example.level2", installs: 20, at: Self.graceEnd.adding(3600)))
            let now = Self.graceEnd.adding(7200)
            let run = try await catalog.workflow.runFeedback(store: store, at: now)
            #expect(
                run.changes.map(\.description) == [
                    "com.example.app: quarantined com.example.level2 (reported invalid by 20 production installs from 20 networks since 2026-03-03T12:00:00Z, invalid rate 1.0)"
                ])
            #expect(run.written == [Self.app])
            let file = try #require(Self.feedback(catalog))
            #expect(file.verdicts["com.example.level2"]?.evidence?.installs == InstallCounts(production: 20))
            #expect(file.verdicts["com.example.level2"]?.since == now)

            let bytes = FileManager.default.contents(atPath: catalog.workflow.feedbackURL(Self.app).path)
            let again = try await catalog.workflow.runFeedback(store: store, at: now.adding(600))
            #expect(again.changes.isEmpty && again.written.isEmpty, "nothing changed, nothing written")
            #expect(FileManager.default.contents(atPath: catalog.workflow.feedbackURL(Self.app).path) == bytes)

            let build = try #require(try catalog.build(at: now.adding(700)).plans.first)
            #expect(build.feedbackChanges.map(\.kind) == [.quarantined])
            #expect(text(catalog.published("v1/apps/com.example.app/products.json")) == #"["com.example.level1","com.example.rocket_car"]"#)
        }
    }

    /// Within 48 h of its first publication nothing about an identifier counts; from the end of
    /// the grace period on, everything does.
    @Test func gracePeriodBoundary() async throws {
        try await Self.withPublishedSeed { catalog in
            let store = try await catalog.reportStore(
                invalidReports("com.example.level1", installs: 30, at: Self.graceEnd.adding(-1))
                    + invalidReports("com.example.level2", installs: 20, at: Self.graceEnd))
            let run = try await catalog.workflow.runFeedback(store: store, at: Self.graceEnd.adding(3600))
            #expect(run.changes.map(\.identifier) == ["com.example.level2"])
            #expect(run.changes.map(\.kind) == [.quarantined])
        }
    }

    /// Still in grace: nothing counts however many installs report.
    @Test func inGraceNothingCounts() async throws {
        try await Self.withPublishedSeed { catalog in
            let store = try await catalog.reportStore(invalidReports("com.example.level2", installs: 50, at: buildMoment.adding(10 * 3600)))
            let run = try await catalog.workflow.runFeedback(store: store, at: buildMoment.adding(30 * 3600))
            #expect(run.changes.isEmpty && run.written.isEmpty)
        }
    }

    @Test func windowBoundary() async throws {
        try await Self.withPublishedSeed { catalog in
            let now = Self.graceEnd.adding(100 * 3600)
            let windowStart = now.adding(-24 * 3600)
            let store = try await catalog.reportStore(
                invalidReports("com.example.level1", installs: 30, at: windowStart.adding(-1))
                    + invalidReports("com.example.level2", installs: 20, at: windowStart))
            let run = try await catalog.workflow.runFeedback(store: store, at: now)
            #expect(run.changes.map(\.description) == ["com.example.app: quarantined com.example.level2 (\(Self.reason))"])
        }
    }

    /// Released: the reports before the release (its own second included) no longer count;
    /// new ones can quarantine it again.
    @Test func releaseThenOldReportsAreIgnored() async throws {
        try await Self.withPublishedSeed { catalog in
            let reported = Self.graceEnd.adding(24 * 3600)
            let store = try await catalog.reportStore(invalidReports("com.example.level2", installs: 25, at: reported))
            #expect(try await catalog.workflow.runFeedback(store: store, at: reported.adding(60)).changes.map(\.kind) == [.quarantined])
            let releasedAt = reported.adding(120)
            _ = try catalog.workflow.releaseFeedback(app: Self.app, identifier: "com.example.level2", at: releasedAt)

            _ = try await store.store(invalidReports("com.example.level2", installs: 25, at: releasedAt, installPrefix: "same-second"))
            let after = try await catalog.workflow.runFeedback(store: store, at: releasedAt.adding(60))
            #expect(after.changes.isEmpty && after.written.isEmpty)
            #expect(Self.feedback(catalog)?.verdicts.isEmpty == true)

            _ = try await store.store(invalidReports("com.example.level2", installs: 20, at: releasedAt.adding(1), installPrefix: "new"))
            let again = try await catalog.workflow.runFeedback(store: store, at: releasedAt.adding(120))
            #expect(
                again.changes.map(\.description) == [
                    "com.example.app: quarantined com.example.level2 (reported invalid by 20 production installs from 20 networks since \(releasedAt.adding(1).iso8601), invalid rate 1.0)"
                ])
        }
    }

    @Test func quarantineHoldsWhenReportsStop() async throws {
        try await Self.withPublishedSeed { catalog in
            let reported = Self.graceEnd.adding(3600)
            let store = try await catalog.reportStore(invalidReports("com.example.level2", installs: 20, at: reported))
            _ = try await catalog.workflow.runFeedback(store: store, at: reported.adding(60))
            let before = Self.feedback(catalog)
            let weekLater = try await catalog.workflow.runFeedback(store: store, at: reported.adding(7 * 24 * 3600))
            #expect(weekLater.changes.isEmpty && weekLater.written.isEmpty)
            #expect(Self.feedback(catalog) == before)
            #expect(before?.verdicts["com.example.level2"]?.status == .quarantined)
        }
    }

    @Test func suspectComesAndGoes() async throws {
        try await Self.withPublishedSeed { catalog in
            let reported = Self.graceEnd.adding(3600)
            let store = try await catalog.reportStore(
                invalidReports("com.example.level1", installs: 2, at: reported)
                    + invalidReports("com.example.level1", installs: 1, at: reported, environment: .sandbox, installPrefix: "tester"))
            let suspect = try await catalog.workflow.runFeedback(store: store, at: reported.adding(60))
            #expect(
                suspect.changes.map(\.description) == [
                    "com.example.app: suspect com.example.level1 (reported invalid by 3 installs (2 production, 1 sandbox) since 2026-03-03T12:00:00Z, invalid rate 1.0)"
                ])
            let build = try #require(try catalog.build(at: reported.adding(120)).plans.first)
            #expect(build.isUnchanged, "a suspect stays on sale")

            let later = try await catalog.workflow.runFeedback(store: store, at: reported.adding(25 * 3600))
            #expect(later.changes.map(\.description) == ["com.example.app: no longer suspect com.example.level1"])
            #expect(later.written == [Self.app])
        }
    }

    /// Reports about identifiers the catalog does not sell make no verdicts.
    @Test func onlyIdentifiersOnSaleAreJudged() async throws {
        try await Self.withPublishedSeed { catalog in
            let store = try await catalog.reportStore(
                invalidReports("com.example.made_up", installs: 40, at: Self.graceEnd.adding(60))
                    + invalidReports("com.example.level1", installs: 40, app: "com.example.other", at: Self.graceEnd.adding(60)))
            let run = try await catalog.workflow.runFeedback(store: store, at: Self.graceEnd.adding(3600))
            #expect(run.changes.isEmpty && run.written.isEmpty)
            #expect(!FileManager.default.fileExists(atPath: catalog.workflow.feedbackURL(Self.app).path))
        }
    }

    @Test func releaseErrors() throws {
        try withCatalog { catalog in
            try catalog.write("com.example.app.plist", seedCatalog)
            #expect(throws: CatalogWorkflow.ReleaseError.self) {
                try catalog.workflow.releaseFeedback(app: Self.app, identifier: "com.example.level1", at: buildMoment)
            }
            do {
                _ = try catalog.workflow.releaseFeedback(app: "com.example.nope", identifier: "com.example.level1", at: buildMoment)
                Issue.record("released in an unknown app")
            } catch {
                #expect(
                    "\(error)"
                        == "unknown app 'com.example.nope': no com.example.nope.plist, com.example.nope.xml or com.example.nope/ in catalog"
                )
            }
            do {
                _ = try catalog.workflow.releaseFeedback(app: Self.app, identifier: "com.example.level1", at: buildMoment)
            } catch {
                #expect("\(error)" == "'com.example.level1' is neither quarantined nor suspect in 'com.example.app'; nothing to release")
            }
            #expect(!FileManager.default.fileExists(atPath: catalog.workflow.feedbackURL(Self.app).path))
        }
    }
}
