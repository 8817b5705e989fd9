import CatalogKit
import CatalogTestSupport
import Foundation
import Logging
import Storage
import Testing
import Time

/// What one party can do to an app through the feedback loop (docs/feedback.md, "Trust"), on a
/// real SQLite store: networks rather than installs, store-wide failures told apart, the
/// quarantine budget, and a probable cause for every verdict.
@Suite struct FeedbackTrustTests {
    static let app = "com.example.app"
    /// Long after the seed's first publication: grace and propagation are over.
    static let later = buildMoment.adding(10 * 24 * 3600)

    /// An app of `count` products `com.example.p00`… with the given settings, published at
    /// `buildMoment`.
    static func catalog(products count: Int, platforms: [String] = [], policy: String = "") -> String {
        let platformList =
            platforms.isEmpty
            ? "" : "\t<key>platforms</key>\n\t<array>" + platforms.map { "<string>\($0)</string>" }.joined() + "</array>\n"
        let policyDict = policy.isEmpty ? "" : "\t<key>feedbackPolicy</key>\n\t<dict>\(policy)</dict>\n"
        let products = (0..<count).map { "\t\t<dict><key>id</key><string>\(id($0))</string></dict>" }.joined(separator: "\n")
        return plist("<dict>\n\(platformList)\(policyDict)\t<key>products</key>\n\t<array>\n\(products)\n\t</array>\n</dict>")
    }

    static func id(_ index: Int) -> String { "com.example.p" + (index < 10 ? "0" : "") + String(index) }

    static func withPublished(_ source: String, _ body: (TemporaryCatalog) async throws -> Void) async throws {
        let catalog = try TemporaryCatalog()
        defer { catalog.cleanUp() }
        try catalog.write("com.example.app.plist", source)
        _ = try catalog.build(at: buildMoment)
        try await body(catalog)
    }

    static func feedback(_ catalog: TemporaryCatalog) -> FeedbackFile? {
        FeedbackFile.read(catalog.workflow.feedbackURL(app), displayPath: "feedback").file
    }

    /// Product reports naming `invalid` from `networks` networks, one install each, with every
    /// identifier of `requested` asked for.
    static func reports(
        _ invalid: [String], requested: [String]?, networks: Int, prefix: String = "n", at moment: Timestamp = later,
        environment: ReportEnvironment = .production, platform: Platform = .iOS, version: String = "2.3", storefront: String = "USA"
    ) -> [InvalidIdentifierReport] {
        (0..<networks).map { index in
            InvalidIdentifierReport(
                app: app, reportID: "\(prefix)-\(index)-\(invalid.joined())", receivedAt: moment, invalid: invalid, requested: requested,
                platform: platform, appVersion: AppVersion(version), environment: environment, storefront: storefront,
                installID: "\(prefix)-install-\(index)", network: "\(prefix)-network-\(index)")
        }
    }

    // MARK: - Networks, not installs

    enum Engine: String, CaseIterable, Sendable { case sqlite, postgres }
    enum StoreURLError: Error { case notPostgres }

    /// A fresh store of `engine` holding `reports`: a SQLite file beside the catalog, or a
    /// database on a PostgreSQL server started for the test (stopped by `cleanUp`).
    static func store(
        _ engine: Engine, _ catalog: TemporaryCatalog, _ reports: [InvalidIdentifierReport]
    ) async throws -> (store: any ReportStore, cleanUp: @Sendable () async -> Void) {
        switch engine {
        case .sqlite:
            return (try await catalog.reportStore(reports), {})
        case .postgres:
            let server = try await offThePool { try TestPostgres.start() }
            guard case .postgres(let address) = try StoreURL(parsing: try await server.createDatabase()) else {
                server.stop()
                throw StoreURLError.notPostgres
            }
            let store = try await PostgresStore.open(address, logger: Logger(label: "catalog.tests.trust"))
            _ = try await store.store(reports)
            return (
                store,
                {
                    try? await store.close()
                    server.stop()
                }
            )
        }
    }

    /// The whole story on both engines: a flood of invented installs from one network, any mix
    /// of environments and shapes, takes nothing off sale; every requested id failing from 25
    /// networks raises the alert; genuine product reports from 20 networks quarantine the one
    /// bad identifier.
    @Test(arguments: Engine.allCases)
    func oneNetworkCannotWhatManyNetworksCan(_ engine: Engine) async throws {
        try await Self.withPublished(seedCatalog) { catalog in
            let all = ["com.example.level1", "com.example.level2", "com.example.rocket_car"]
            var flood: [InvalidIdentifierReport] = []
            for index in 0..<200 {
                flood.append(
                    InvalidIdentifierReport(
                        app: Self.app, reportID: "attack-\(index)", receivedAt: Self.later,
                        invalid: index % 2 == 0 ? all : ["com.example.level2"],
                        requested: index % 3 == 0 ? nil : all, environment: index % 5 == 0 ? .sandbox : .production,
                        installID: "invented-\(index)", network: "the-attackers-network"))
            }
            let (store, cleanUp) = try await Self.store(engine, catalog, flood)
            do {
                let attacked = try await catalog.workflow.runFeedback(store: store, at: Self.later.adding(60))
                #expect(!attacked.changes.contains { $0.kind == .quarantined } && attacked.alerts.isEmpty, "\(attacked.changes)")

                _ = try await store.store(Self.reports(all, requested: all, networks: 25, prefix: "outage", at: Self.later.adding(100)))
                let outage = try await catalog.workflow.runFeedback(store: store, at: Self.later.adding(160))
                #expect(outage.alerts[Self.app]?.code == .storeWideFailure)
                #expect(!outage.changes.contains { $0.kind == .quarantined })

                // A day later the outage is out of the window; genuine reports come in.
                let dayLater = Self.later.adding(25 * 3600)
                _ = try await store.store(
                    Self.reports(
                        ["com.example.level2"], requested: ["com.example.level2", "com.example.level1"], networks: 20, at: dayLater))
                let genuine = try await catalog.workflow.runFeedback(store: store, at: dayLater.adding(60))
                #expect(genuine.changes.filter { $0.kind == .quarantined }.map(\.identifier) == ["com.example.level2"])
                #expect(genuine.alerts.isEmpty)
                let verdict = try #require(Self.feedback(catalog)?.verdicts["com.example.level2"])
                #expect(verdict.evidence?.networks == 20 && verdict.cause?.code == .onePlatform, "all from iOS; the app names no platform")
            } catch {
                await cleanUp()
                throw error
            }
            await cleanUp()
        }
    }

    /// The attack of issue 15: any number of invented installs from one network, in every shape,
    /// quarantine nothing; the feed stays whole.
    @Test func oneNetworkQuarantinesNothing() async throws {
        try await Self.withPublished(seedCatalog) { catalog in
            let all = ["com.example.level1", "com.example.level2", "com.example.rocket_car"]
            var flood: [InvalidIdentifierReport] = []
            for index in 0..<300 {
                let shapes: [([String], [String]?)] = [(all, nil), (all, all), (["com.example.level2"], all)]
                let (invalid, requested) = shapes[index % shapes.count]
                flood.append(
                    InvalidIdentifierReport(
                        app: Self.app, reportID: "attack-\(index)", receivedAt: Self.later, invalid: invalid, requested: requested,
                        platform: Platform.allCases[index % Platform.allCases.count],
                        environment: ReportEnvironment.allCases[index / shapes.count % ReportEnvironment.allCases.count],
                        installID: "invented-\(index)", network: "the-attackers-network"))
            }
            let store = try await catalog.reportStore(flood)
            let run = try await catalog.workflow.runFeedback(store: store, at: Self.later.adding(60))
            #expect(run.changes.allSatisfy { $0.kind == .suspect }, "\(run.changes)")
            #expect(run.alerts.isEmpty)
            let level2 = try #require(Self.feedback(catalog)?.verdicts["com.example.level2"])
            #expect(level2.evidence?.networks == 1 && level2.evidence?.networkInstalls == 1)
            #expect(try catalog.build(at: Self.later.adding(120)).plans.first?.isUnchanged == true)
            #expect(text(catalog.published("v1/apps/com.example.app/products.json")) == seedProductsJSON)
        }
    }

    /// Reports that leave out what they requested count toward suspect only, from any number
    /// of networks.
    @Test func reportsWithoutARequestedListOnlyMakeSuspects() async throws {
        try await Self.withPublished(seedCatalog) { catalog in
            let store = try await catalog.reportStore(Self.reports(["com.example.level2"], requested: nil, networks: 40))
            let run = try await catalog.workflow.runFeedback(store: store, at: Self.later.adding(60))
            #expect(run.changes.map(\.kind) == [.suspect])
            #expect(Self.feedback(catalog)?.verdicts["com.example.level2"]?.evidence?.networks == 0)
        }
    }

    // MARK: - One network, one voice in the invalid rate

    /// `count` production reports from one network, each from an install of its own invented,
    /// asking for `requested` and naming `invalid` invalid.
    static func oneNetwork(
        _ count: Int, invalid: [String], requested: [String], network: String = "the-attackers-network"
    ) -> [InvalidIdentifierReport] {
        (0..<count).map { index in
            InvalidIdentifierReport(
                app: app, reportID: "\(network)-\(index)", receivedAt: later, invalid: invalid, requested: requested, platform: .iOS,
                appVersion: AppVersion("2.3"), environment: .production, storefront: "USA", installID: "\(network)-install-\(index)",
                network: network)
        }
    }

    /// Issue 35 item 7, the attack: 25 networks report level2 invalid, and one network sends
    /// 500 reports that ask for it and name only another identifier invalid. Counted by report,
    /// the rate was 25 of 525 and held the quarantine back for as long as the flood went on;
    /// counted by network, the flood is one voice of 26.
    @Test(arguments: Engine.allCases)
    func oneNetworkCannotHoldBackAQuarantine(_ engine: Engine) async throws {
        try await Self.withPublished(seedCatalog) { catalog in
            let all = ["com.example.level1", "com.example.level2", "com.example.rocket_car"]
            let genuine = Self.reports(["com.example.level2"], requested: ["com.example.level2", "com.example.level1"], networks: 25)
            let flood = Self.oneNetwork(500, invalid: ["com.example.rocket_car"], requested: all)
            let (store, cleanUp) = try await Self.store(engine, catalog, genuine + flood)
            do {
                let run = try await catalog.workflow.runFeedback(store: store, at: Self.later.adding(60))
                #expect(
                    run.changes.map { "\($0.identifier) \($0.kind.rawValue)" } == [
                        "com.example.level2 quarantined", "com.example.rocket_car suspect",
                    ])
                let verdict = try #require(Self.feedback(catalog)?.verdicts["com.example.level2"])
                #expect(verdict.evidence?.invalidRate == 0.96, "25 of 26 networks")
            } catch {
                await cleanUp()
                throw error
            }
            await cleanUp()
        }
    }

    /// The converse: the store refuses valid identifiers now and then. 20 networks each saw p01
    /// refused once in four requests (and p02, which is broken, in the other three); one network
    /// sends 500 reports naming p01 invalid. Counted by report, the rate was 520 of 580 and took
    /// p01 off sale with p02; counted by network it is 6 of 21, and p01 stays on sale.
    @Test(arguments: Engine.allCases)
    func oneNetworkCannotPushAQuarantineThrough(_ engine: Engine) async throws {
        try await Self.withPublished(Self.catalog(products: 20)) { catalog in
            let requested = [Self.id(0), Self.id(1), Self.id(2)]
            var genuine: [InvalidIdentifierReport] = []
            for network in 0..<20 {
                for index in 0..<4 {
                    genuine.append(
                        InvalidIdentifierReport(
                            app: Self.app, reportID: "g-\(network)-\(index)", receivedAt: Self.later,
                            invalid: [index == 0 ? Self.id(1) : Self.id(2)], requested: requested, platform: .iOS,
                            appVersion: AppVersion("2.3"), environment: .production, storefront: "USA", installID: "g-install-\(network)",
                            network: "g-network-\(network)"))
                }
            }
            let flood = Self.oneNetwork(500, invalid: [Self.id(1)], requested: [Self.id(0), Self.id(1)])
            let (store, cleanUp) = try await Self.store(engine, catalog, genuine + flood)
            do {
                let run = try await catalog.workflow.runFeedback(store: store, at: Self.later.adding(60))
                #expect(
                    run.changes.map { "\($0.identifier) \($0.kind.rawValue)" } == [
                        "com.example.p01 suspect", "com.example.p02 quarantined",
                    ])
                let verdict = try #require(Self.feedback(catalog)?.verdicts[Self.id(1)])
                #expect(verdict.evidence?.networks == 21 && verdict.evidence?.invalidRate == 0.29, "6 of 21 networks")
                #expect(verdict.reason.hasSuffix("invalid rate 0.29, below the 0.5 needed to quarantine"), "\(verdict.reason)")
            } catch {
                await cleanUp()
                throw error
            }
            await cleanUp()
        }
    }

    // MARK: - Store-wide failures

    /// Every requested identifier invalid, from as many networks as a quarantine needs: the
    /// store is failing. An alert, and no quarantine.
    @Test func allInvalidReportsRaiseTheAppAlert() async throws {
        try await Self.withPublished(seedCatalog) { catalog in
            let all = ["com.example.level1", "com.example.level2", "com.example.rocket_car"]
            let store = try await catalog.reportStore(Self.reports(all, requested: all, networks: 25))
            let run = try await catalog.workflow.runFeedback(store: store, at: Self.later.adding(60))
            let alert = try #require(run.alerts[Self.app])
            #expect(alert.code == .storeWideFailure)
            #expect(
                alert.message
                    == "store-wide failure: check agreements, bundle identifier, App Store status (every requested identifier invalid in 25 production reports from 25 networks in the last 24 h)"
            )
            #expect(!run.changes.contains { $0.kind == .quarantined })
            #expect(Self.feedback(catalog)?.alert?.since == Self.later.adding(60))
            #expect(try catalog.build(at: Self.later.adding(120)).plans.first?.isUnchanged == true)

            // The alert holds, since its first run, while its reports do; then it clears.
            let again = try await catalog.workflow.runFeedback(store: store, at: Self.later.adding(600))
            #expect(again.alerts[Self.app]?.since == Self.later.adding(60))
            let dayLater = try await catalog.workflow.runFeedback(store: store, at: Self.later.adding(25 * 3600))
            #expect(dayLater.alerts.isEmpty)
            #expect(Self.feedback(catalog)?.alert == nil)
        }
    }

    /// Most of an app's identifiers with a quarantine's evidence in one window: not the products.
    @Test func mostIdentifiersFailingAtOnceRaiseTheAlert() async throws {
        try await Self.withPublished(seedCatalog) { catalog in
            let all = ["com.example.level1", "com.example.level2", "com.example.rocket_car"]
            let store = try await catalog.reportStore(
                Self.reports(["com.example.level1"], requested: all, networks: 20, prefix: "a")
                    + Self.reports(["com.example.level2"], requested: all, networks: 20, prefix: "b"))
            let run = try await catalog.workflow.runFeedback(store: store, at: Self.later.adding(60))
            #expect(
                run.alerts[Self.app]?.message.hasSuffix(
                    "(2 of 3 sellable identifiers reported invalid enough to quarantine in the last 24 h)") == true)
            #expect(run.changes.map(\.kind) == [.awaitingEditor, .awaitingEditor])
            let level1 = try #require(Self.feedback(catalog)?.verdicts["com.example.level1"])
            #expect(level1.status == .suspect && level1.awaitingEditor)
            #expect(level1.reason.hasSuffix("; not quarantined: store-wide failure alert"))
            #expect(text(catalog.published("v1/apps/com.example.app/products.json")) == seedProductsJSON)
        }
    }

    // MARK: - The quarantine budget

    /// 20 products: a budget of 2. Three identifiers with evidence: the two with the most are
    /// quarantined, the third waits for an editor; runs do not add up past the budget; the
    /// editor's confirmation takes it off sale without spending the budget.
    @Test func budgetHoldsAndTheEditorTakesAnIdentifierPastIt() async throws {
        try await Self.withPublished(Self.catalog(products: 20)) { catalog in
            // Each report asked for its identifier and one that came back valid.
            func requested(_ index: Int) -> [String] { [Self.id(index), Self.id(0)] }
            let store = try await catalog.reportStore(
                Self.reports([Self.id(3)], requested: requested(3), networks: 30, prefix: "a")
                    + Self.reports([Self.id(5)], requested: requested(5), networks: 25, prefix: "b")
                    + Self.reports([Self.id(7)], requested: requested(7), networks: 21, prefix: "c"))
            let run = try await catalog.workflow.runFeedback(store: store, at: Self.later.adding(60))
            #expect(run.alerts.isEmpty)
            #expect(
                run.changes.map { "\($0.identifier) \($0.kind.rawValue)" } == [
                    "com.example.p03 quarantined", "com.example.p05 quarantined", "com.example.p07 suspect (awaiting an editor)",
                ])
            let waiting = try #require(Self.feedback(catalog)?.verdicts[Self.id(7)])
            #expect(
                waiting.reason.hasSuffix(
                    "not quarantined: the quarantine budget (2 of 20 sellable) is spent; confirm with 'catalog feedback quarantine com.example.app com.example.p07'"
                ))

            _ = try await store.store(
                Self.reports([Self.id(9)], requested: requested(9), networks: 40, prefix: "d", at: Self.later.adding(100)))
            let again = try await catalog.workflow.runFeedback(store: store, at: Self.later.adding(200))
            #expect(again.changes.map { "\($0.identifier) \($0.kind.rawValue)" } == ["com.example.p09 suspect (awaiting an editor)"])
            #expect(Self.feedback(catalog)?.verdicts.values.filter(\.isAutomaticQuarantine).count == 2, "runs do not add up")

            let confirmed = try catalog.workflow.confirmQuarantine(
                app: Self.app, identifier: Self.id(7), by: "alice", at: Self.later.adding(300))
            #expect(confirmed.kind == .quarantined)
            let verdict = try #require(Self.feedback(catalog)?.verdicts[Self.id(7)])
            #expect(verdict.status == .quarantined && verdict.confirmedBy == "alice" && !verdict.awaitingEditor)
            #expect(verdict.cause != nil && verdict.evidence?.networks == 21)
            #expect(throws: CatalogWorkflow.ReleaseError.self) {
                try catalog.workflow.confirmQuarantine(app: Self.app, identifier: Self.id(7), by: "alice", at: Self.later.adding(301))
            }
            #expect(throws: CatalogWorkflow.ReleaseError.self) {
                try catalog.workflow.confirmQuarantine(
                    app: Self.app, identifier: "com.example.unknown", by: "alice", at: Self.later.adding(301))
            }
            let build = try #require(try catalog.build(at: Self.later.adding(400)).plans.first)
            #expect(Set(build.feedbackChanges.map(\.identifier)) == [Self.id(3), Self.id(5), Self.id(7)])

            // A confirmed quarantine spends none of the budget, and the next run keeps it all.
            let after = try await catalog.workflow.runFeedback(store: store, at: Self.later.adding(500))
            #expect(after.changes.isEmpty)
        }
    }

    // MARK: - Probable causes

    struct Pattern: Sendable, CustomTestStringConvertible {
        var name: String
        var platforms: [String] = ["iOS"]
        var policy = ""
        /// Reports about `com.example.p00`, and about `com.example.p01` (the app's other reports).
        var suspect: [InvalidIdentifierReport]
        var others: [InvalidIdentifierReport] = []
        var moment = FeedbackTrustTests.later
        var cause: ProbableCause.Code
        var explanation: String
        var testDescription: String { name }
    }

    static let everyID = (0..<4).map(id)

    static let patterns: [Pattern] = [
        Pattern(
            name: "sandbox only", suspect: reports([id(0)], requested: everyID, networks: 5, environment: .sandbox), cause: .sandboxOnly,
            explanation:
                "only sandbox or Xcode installs reported it: check the product in the sandbox or the StoreKit configuration; production is not affected"
        ),
        Pattern(
            name: "within the propagation window", policy: "<key>graceHours</key><integer>0</integer>",
            suspect: reports([id(0)], requested: everyID, networks: 20, at: buildMoment.adding(20 * 3600)),
            moment: buildMoment.adding(20 * 3600), cause: .propagationWindow,
            explanation:
                "within the propagation window: first published 20 h ago, and the App Store can take up to 48 h after approval to offer a product"
        ),
        Pattern(
            name: "one platform of several", platforms: ["iOS", "macOS"],
            suspect: reports([id(0)], requested: everyID, networks: 20, platform: .macOS), cause: .onePlatform,
            explanation: "only on macOS: check the product's availability on that platform in App Store Connect"),
        Pattern(
            name: "new app versions only", suspect: reports([id(0)], requested: everyID, networks: 20, version: "3.1"),
            others: reports([id(1)], requested: everyID, networks: 3, prefix: "o", version: "2.9"), cause: .newAppVersions,
            explanation: "only from app version 3.1 on, while older versions report other identifiers: check what that version requests"),
        Pattern(
            name: "some storefronts", suspect: reports([id(0)], requested: everyID, networks: 20, storefront: "FRA"),
            others: reports([id(1)], requested: everyID, networks: 3, prefix: "o", storefront: "DEU")
                + reports([id(1)], requested: everyID, networks: 3, prefix: "p", storefront: "USA"),
            cause: .someStorefronts, explanation: "only in FRA: check the product's availability in those countries or regions"),
        Pattern(
            name: "everywhere", suspect: reports([id(0)], requested: everyID, networks: 20), cause: .everywhere,
            explanation: "everywhere, from 20 networks: likely not cleared for sale, or removed, in App Store Connect"),
    ]

    @Test(arguments: patterns)
    func probableCause(_ pattern: Pattern) async throws {
        try await Self.withPublished(Self.catalog(products: 4, platforms: pattern.platforms, policy: pattern.policy)) { catalog in
            let store = try await catalog.reportStore(pattern.suspect + pattern.others)
            _ = try await catalog.workflow.runFeedback(store: store, at: pattern.moment.adding(60))
            let verdict = try #require(Self.feedback(catalog)?.verdicts[Self.id(0)])
            #expect(verdict.cause == ProbableCause(pattern.cause, pattern.explanation))
        }
    }
}
