import PropertyList

/// Turns an app's reports into verdicts: the store's aggregates, judged by the app's policy.
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
    /// - Parameter history: when each identifier was first published; nil for an app never
    ///   published.
    public static func evaluate(
        _ catalog: AppCatalog, history: IdentifierHistory?, store: any ReportStore, at now: Timestamp
    ) async throws -> (feedback: FeedbackFile, changes: [VerdictChange]) {
        let policy = catalog.feedbackPolicy
        let previous = catalog.feedback
        let windowStart = policy.windowStart(at: now)
        let offered = Set(catalog.products.lazy.filter { $0.status == .cleared }.map(\.id))
        let inWindow = Dictionary(
            grouping: try await store.aggregate(AggregateQuery(app: catalog.app, since: windowStart)).filter {
                offered.contains($0.identifier)
            },
            by: \.identifier)

        var next = FeedbackFile(released: previous.released)
        var changes: [VerdictChange] = []
        for identifier in Set(inWindow.keys).union(previous.verdicts.keys).sorted() {
            let countedFrom = policy.countingStart(
                at: now, firstPublishedAt: history?[identifier]?.firstPublishedAt, releasedAt: previous.released[identifier])
            var aggregates = inWindow[identifier] ?? []
            if countedFrom > windowStart {
                aggregates =
                    countedFrom <= now && offered.contains(identifier)
                    ? try await store.aggregate(AggregateQuery(app: catalog.app, identifier: identifier, since: countedFrom)) : []
            }
            let before = previous.verdicts[identifier]
            let after = policy.verdict(for: aggregates, countedFrom: countedFrom, at: now, previous: before)
            next.verdicts[identifier] = after
            if let change = change(of: identifier, in: catalog.app, from: before, to: after) { changes.append(change) }
        }
        return (next, changes)
    }

    /// What `catalog feedback` prints for a verdict that moved; nil when its status stayed.
    static func change(of identifier: String, in app: String, from before: Verdict?, to after: Verdict?) -> VerdictChange? {
        switch (before?.status, after) {
        case (let old, let new?) where old != new.status:
            return VerdictChange(
                app: app, identifier: identifier, kind: new.status == .quarantined ? .quarantined : .suspect, reason: new.reason)
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
