import Time

/// The aggregates with their invalid rate spelled out and each identifier's verdict, and each
/// app's alert: what `catalog reports --json` prints and the editor API's reports endpoint answers.
///
/// Most affected first, one page of them: `total` says how many there are in all.
public struct ReportsDocument: Encodable, Sendable {
    /// Only reports received at or after this moment were aggregated; nil for all that retention kept.
    public var since: Timestamp?
    /// How many aggregates there are in all, on every page.
    public var total: Int
    /// The index of this page's first aggregate among them all.
    public var offset: Int
    /// This page's aggregates, most affected first.
    public var aggregates: [Row]
    /// Each app's alert (docs/feedback.md, "Store-wide failures"), by app.
    public var alerts: [String: Alert]

    /// The document for one page of `aggregates`.
    ///
    /// - Parameters:
    ///   - since: the moment the aggregated reports start from; nil for all.
    ///   - aggregates: every aggregate, most affected first.
    ///   - verdicts: each app's verdicts, by app, then by identifier.
    ///   - alerts: each app's alert, by app.
    ///   - page: which of the aggregates to include (clamped to them); nil for all.
    public init(
        since: Timestamp?, aggregates: [ReportAggregate], verdicts: [String: [String: Verdict]], alerts: [String: AppAlert] = [:],
        page: Range<Int>? = nil
    ) {
        self.since = since
        total = aggregates.count
        let page = page.map { $0.clamped(to: 0..<aggregates.count) } ?? 0..<aggregates.count
        offset = page.lowerBound
        self.aggregates = aggregates[page].map { Row(aggregate: $0, verdict: verdicts[$0.app]?[$0.identifier]) }
        self.alerts = alerts.mapValues(Alert.init)
    }

    /// An app's alert as the document encodes it.
    public struct Alert: Encodable, Sendable {
        /// The alert's stable code, such as `store-wide-failure`.
        public let code: String
        /// What is wrong, what to check, and the evidence, in one sentence.
        public let message: String
        /// When the alert was first raised.
        public let since: Timestamp

        init(_ alert: AppAlert) {
            (code, message, since) = (alert.code.rawValue, alert.message, alert.since)
        }
    }

    /// An aggregate's members plus its invalid rate, which is computed rather than stored, and
    /// the identifier's verdict with its probable cause.
    public struct Row: Encodable, Sendable {
        /// The report aggregate, encoded with its own members.
        public let aggregate: ReportAggregate
        /// The identifier's verdict now; nil when it has none.
        public let verdict: Verdict?
        private enum Key: String, CodingKey { case invalidRate, verdict, reason, cause, causeCode, awaitingEditor, networks }

        public func encode(to encoder: any Encoder) throws {
            try aggregate.encode(to: encoder)
            var container = encoder.container(keyedBy: Key.self)
            try container.encodeIfPresent(aggregate.invalidRate, forKey: .invalidRate)
            try container.encodeIfPresent(verdict?.status.rawValue, forKey: .verdict)
            try container.encodeIfPresent(verdict?.reason, forKey: .reason)
            try container.encodeIfPresent(verdict?.cause?.explanation, forKey: .cause)
            try container.encodeIfPresent(verdict?.cause?.code.rawValue, forKey: .causeCode)
            if verdict?.awaitingEditor == true { try container.encode(true, forKey: .awaitingEditor) }
            try container.encodeIfPresent(verdict?.evidence?.networks, forKey: .networks)
        }
    }
}

extension CatalogWorkflow {
    /// The aggregates of `app` (every app when nil) since `since`, with the verdict each
    /// identifier would get now under its app's policy; sources with errors are not judged.
    ///
    /// - Parameters:
    ///   - store: where the reports are.
    ///   - app: the app, or nil for every app.
    ///   - since: the earliest report to count; nil for all.
    ///   - now: the moment verdicts are judged at.
    ///   - page: which of the aggregates, most affected first; nil for all.
    public func reports(
        store: any ReportStore, app: String?, since: Timestamp?, at now: Timestamp, page: Range<Int>? = nil
    ) async throws -> ReportsDocument {
        let aggregates = try await store.aggregate(AggregateQuery(app: app, since: since))
        let judged = try await judgeFeedback(store: store, at: now).apps.filter { app == nil || $0.app == app }
        let verdicts = Dictionary(uniqueKeysWithValues: judged.map { ($0.app, $0.verdicts.feedback.verdicts) })
        var alerts: [String: AppAlert] = [:]
        for entry in judged { alerts[entry.app] = entry.verdicts.feedback.alert }
        return ReportsDocument(since: since, aggregates: aggregates, verdicts: verdicts, alerts: alerts, page: page)
    }
}
