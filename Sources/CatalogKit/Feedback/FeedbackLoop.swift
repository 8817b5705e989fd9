import PropertyList
import Time

/// Turns an app's reports into verdicts: the store's aggregates, judged by the app's policy,
/// then the rules that protect the whole app (docs/feedback.md, "Trust").
public enum FeedbackLoop {
    /// The feedback file `catalog` should have at `now`, and how its verdicts changed.
    ///
    /// One aggregate over the window finds the identifiers with reports; an identifier whose
    /// grace period or release ends inside the window is asked for again from that later
    /// moment, as the store counts distinct installs and cannot subtract them afterwards.
    ///
    /// Only identifiers the sources sell (status `cleared`) get new verdicts: reports about
    /// anything else (ids apps have from elsewhere, or made up) would fill the file with
    /// verdicts that change nothing. Earlier verdicts are judged again whatever the id is now.
    ///
    /// Each identifier is judged by its own evidence first; then, for the app as a whole:
    /// - a **store-wide failure** (every requested id failing from as many networks as a
    ///   quarantine needs, or more than the policy's share of the sellable ids having a
    ///   quarantine's evidence at once) raises an ``AppAlert`` and quarantines nothing new;
    /// - the **quarantine budget** bounds how many ids automatic quarantine holds off sale; new
    ///   candidates past it, most evidence first, stay on sale as suspects awaiting an editor.
    ///
    /// - Parameters:
    ///   - catalog: the app, with its policy and the verdicts its feedback file holds.
    ///   - history: when each identifier was first published; nil for an app never published.
    ///   - store: where the reports are.
    ///   - now: the moment the windows and grace periods are counted back from.
    public static func evaluate(
        _ catalog: AppCatalog, history: IdentifierHistory?, store: any ReportStore, at now: Timestamp
    ) async throws -> (feedback: FeedbackFile, changes: [VerdictChange]) {
        let policy = catalog.feedbackPolicy
        let previous = catalog.feedback
        let windowStart = policy.windowStart(at: now)
        let perNetwork = Int(clamping: policy.installsPerNetwork)
        let offered = Set(catalog.products.lazy.filter { $0.status == .cleared }.map(\.id))
        let window = AggregateQuery(app: catalog.app, since: windowStart, installsPerNetwork: perNetwork)
        let everything = try await store.aggregate(window)
        let inWindow = Dictionary(grouping: everything.filter { offered.contains($0.identifier) }, by: \.identifier)
        var networkInWindow: [String: NetworkEvidence] = [:]
        for evidence in try await store.networkEvidence(window) {
            if let identifier = evidence.identifier { networkInWindow[identifier] = evidence }
        }
        let context = CauseContext(catalog: catalog, appAggregates: everything, history: history, policy: policy, now: now)

        // Each identifier by its own evidence.
        var judged: [String: Verdict] = [:]
        for identifier in Set(inWindow.keys).union(previous.verdicts.keys) {
            let countedFrom = policy.countingStart(
                at: now, firstPublishedAt: history?[identifier]?.firstPublishedAt, releasedAt: previous.released[identifier])
            var aggregates = inWindow[identifier] ?? []
            var network = networkInWindow[identifier]
            if countedFrom > windowStart {
                let later = AggregateQuery(app: catalog.app, identifier: identifier, since: countedFrom, installsPerNetwork: perNetwork)
                let counts = countedFrom <= now && offered.contains(identifier)
                aggregates = counts ? try await store.aggregate(later) : []
                network = counts ? try await store.networkEvidence(later).first : nil
            }
            var verdict = policy.verdict(
                for: aggregates, network: network, countedFrom: countedFrom, at: now, previous: previous.verdicts[identifier])
            if verdict?.cause == nil, let evidence = verdict?.evidence { verdict?.cause = context.cause(of: identifier, evidence) }
            judged[identifier] = verdict
        }

        // The app as a whole: new quarantines are candidates until the store-wide check and the
        // budget have had their say.
        let candidates = judged.filter { $0.value.status == .quarantined && previous.verdicts[$0.key]?.status != .quarantined }
            .sorted { a, b in
                let (x, y) = (a.value.evidence?.countedInstalls ?? 0, b.value.evidence?.countedInstalls ?? 0)
                return x != y ? x > y : a.key < b.key
            }
        let storeWide = try await store.storeWideEvidence(window)
        let alertMessage = Self.storeWideFailure(
            storeWide, identifiersWithEvidence: candidates.count, sellable: offered.count, policy: policy,
            period: "in the last \(policy.windowHours) h")
        var next = FeedbackFile(released: previous.released)
        if let alertMessage {
            next.alert = AppAlert(code: .storeWideFailure, message: alertMessage, since: previous.alert?.since ?? now)
        }
        var room = policy.quarantineBudget(sellable: offered.count) - previous.verdicts.values.filter(\.isAutomaticQuarantine).count
        for (identifier, verdict) in candidates {
            if alertMessage == nil && room > 0 {
                room -= 1
                continue
            }
            let why =
                alertMessage != nil
                ? "not quarantined: store-wide failure alert"
                : "not quarantined: the quarantine budget (\(policy.quarantineBudget(sellable: offered.count)) of \(offered.count) sellable) is spent; confirm with 'catalog feedback quarantine \(catalog.app) \(identifier)'"
            judged[identifier] = Verdict(
                status: .suspect, reason: "\(verdict.reason); \(why)", since: previous.verdicts[identifier]?.since ?? now,
                evidence: verdict.evidence, cause: verdict.cause, awaitingEditor: true)
        }

        var changes: [VerdictChange] = []
        for identifier in judged.keys.sorted() {
            next.verdicts[identifier] = judged[identifier]
        }
        for identifier in Set(judged.keys).union(previous.verdicts.keys).sorted() {
            if let change = change(of: identifier, in: catalog.app, from: previous.verdicts[identifier], to: judged[identifier]) {
                changes.append(change)
            }
        }
        return (next, changes)
    }

    /// The alert's message when the app's reports show the store failing rather than products;
    /// nil when they do not.
    static func storeWideFailure(
        _ evidence: NetworkEvidence?, identifiersWithEvidence: Int, sellable: Int, policy: FeedbackPolicy, period: String
    ) -> String? {
        if let evidence, Int64(evidence.countedInstalls) >= policy.quarantineAfterInstalls {
            return
                "\(AppAlert.storeWideAdvice) (every requested identifier invalid in \(counted(evidence.reports, "production report")) from \(counted(evidence.networks, "network")) \(period))"
        }
        if sellable > 0, Double(identifiersWithEvidence) > Double(sellable) * policy.storeWideShare {
            return
                "\(AppAlert.storeWideAdvice) (\(identifiersWithEvidence) of \(sellable) sellable identifiers reported invalid enough to quarantine \(period))"
        }
        return nil
    }

    /// What `catalog feedback` prints for a verdict that moved; nil when its status stayed.
    static func change(of identifier: String, in app: String, from before: Verdict?, to after: Verdict?) -> VerdictChange? {
        switch (before?.status, after) {
        case (let old, let new?) where old != new.status || before?.awaitingEditor != new.awaitingEditor:
            let kind: VerdictChange.Kind = new.status == .quarantined ? .quarantined : new.awaitingEditor ? .awaitingEditor : .suspect
            return VerdictChange(app: app, identifier: identifier, kind: kind, reason: new.reason)
        case (.some, nil):
            return VerdictChange(app: app, identifier: identifier, kind: .noLongerSuspect)
        default:
            return nil
        }
    }
}

extension AppCatalog {
    /// Takes the quarantined identifiers of `feedback` off sale; a warning at each quarantine
    /// that names no product of the sources (it has no effect, and is likely stale).
    mutating func apply(_ feedback: FeedbackFile, positions: [String: SourcePosition], file: String) -> [Diagnostic] {
        self.feedback = feedback
        var reasons = feedback.quarantined
        // Most builds have no quarantine: no pass over a catalog of any size.
        guard !reasons.isEmpty else { return [] }
        var diagnostics: [Diagnostic] = []
        for index in products.indices {
            if let reason = reasons.removeValue(forKey: products[index].id) { products[index].quarantineReason = reason }
        }
        for identifier in reasons.keys.sorted() {
            diagnostics.append(
                .warning(
                    "quarantined identifier '\(identifier)' is not in the sources of '\(app)'; release it with 'catalog feedback release \(app) \(identifier)'",
                    file: file, at: positions[identifier] ?? .startOfFile))
        }
        return diagnostics
    }
}

/// What an identifier's reports are read against to name their probable cause: the app's other
/// reports in the window, where the product is sold, and when it was first published.
struct CauseContext {
    let platformsOffered: [String: Int]
    let appPlatformCount: Int
    let appVersions: [String]
    let appStorefronts: Set<String>
    let history: IdentifierHistory?
    let policy: FeedbackPolicy
    let now: Timestamp

    init(catalog: AppCatalog, appAggregates: [ReportAggregate], history: IdentifierHistory?, policy: FeedbackPolicy, now: Timestamp) {
        var platformsOffered: [String: Int] = [:]
        for product in catalog.products where product.status == .cleared {
            platformsOffered[product.id] = product.platforms?.count ?? 0
        }
        self.platformsOffered = platformsOffered
        // An app that names no platform is sold wherever the App Store sells: count them as many.
        appPlatformCount = catalog.platforms.isEmpty ? Platform.allCases.filter(\.isApple).count : catalog.platforms.count
        appVersions = Set(appAggregates.flatMap(\.appVersions)).sorted(by: VerdictEvidence.versionOrder)
        appStorefronts = Set(appAggregates.flatMap(\.storefronts))
        self.history = history
        self.policy = policy
        self.now = now
    }

    /// The first cause whose pattern the evidence shows, in the order of how specific it is.
    func cause(of identifier: String, _ evidence: VerdictEvidence) -> ProbableCause {
        if evidence.installs.production == 0 {
            return ProbableCause(
                .sandboxOnly,
                "only sandbox or Xcode installs reported it: check the product in the sandbox or the StoreKit configuration; production is not affected"
            )
        }
        // A product is offered only after App Store approval, which the catalog cannot see, so
        // the window is counted from its first publication: grace plus one counting window.
        if let first = history?[identifier]?.firstPublishedAt,
            now.secondsSince1970 - first.secondsSince1970 < (policy.graceHours + policy.windowHours) * 3600
        {
            let hours = (now.secondsSince1970 - first.secondsSince1970) / 3600
            return ProbableCause(
                .propagationWindow,
                "within the propagation window: first published \(hours) h ago, and the App Store can take up to 48 h after approval to offer a product"
            )
        }
        let offeredOn = platformsOffered[identifier].map { $0 == 0 ? appPlatformCount : $0 } ?? appPlatformCount
        if evidence.platforms.count == 1, offeredOn > 1 {
            // Android's reports are Google Play's answers: its products live in Play Console.
            let store = Platform(name: evidence.platforms[0]) == .android ? "Play Console" : "App Store Connect"
            return ProbableCause(
                .onePlatform, "only on \(evidence.platforms[0]): check the product's availability on that platform in \(store)")
        }
        if let oldest = evidence.appVersions.first, let appOldest = appVersions.first, oldest != appOldest,
            VerdictEvidence.versionOrder(appOldest, oldest)
        {
            return ProbableCause(
                .newAppVersions,
                "only from app version \(oldest) on, while older versions report other identifiers: check what that version requests")
        }
        if (1...3).contains(evidence.storefronts.count), appStorefronts.count > evidence.storefronts.count {
            return ProbableCause(
                .someStorefronts,
                "only in \(evidence.storefronts.joined(separator: ", ")): check the product's availability in those countries or regions")
        }
        return ProbableCause(
            .everywhere,
            "everywhere, from \(counted(evidence.networks, "network")): likely not cleared for sale, or removed, in App Store Connect")
    }
}
