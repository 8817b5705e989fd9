import PropertyList

/// The aggregates with their invalid rate spelled out and each identifier's verdict: what
/// `catalog reports --json` prints and the editor API's reports endpoint answers.
public struct ReportsDocument: Encodable, Sendable {
    public var since: Timestamp?
    public var aggregates: [Row]

    public init(since: Timestamp?, aggregates: [ReportAggregate], verdicts: [String: [String: Verdict]]) {
        self.since = since
        self.aggregates = aggregates.map { Row(aggregate: $0, verdict: verdicts[$0.app]?[$0.identifier]) }
    }

    /// An aggregate's members plus its invalid rate, which is computed rather than stored, and
    /// the identifier's verdict.
    public struct Row: Encodable, Sendable {
        public let aggregate: ReportAggregate
        public let verdict: Verdict?
        private enum Key: String, CodingKey { case invalidRate, verdict, reason }

        public func encode(to encoder: any Encoder) throws {
            try aggregate.encode(to: encoder)
            var container = encoder.container(keyedBy: Key.self)
            try container.encodeIfPresent(aggregate.invalidRate, forKey: .invalidRate)
            try container.encodeIfPresent(verdict?.status.rawValue, forKey: .verdict)
            try container.encodeIfPresent(verdict?.reason, forKey: .reason)
        }
    }
}

extension CatalogWorkflow {
    /// The aggregates of `app` (every app when nil) since `since`, with the verdict each
    /// identifier would get now under its app's policy; sources with errors are not judged.
    public func reports(store: any ReportStore, app: String?, since: Timestamp?, at now: Timestamp) async throws -> ReportsDocument {
        let aggregates = try await store.aggregate(AggregateQuery(app: app, since: since))
        let judged = try await judgeFeedback(store: store, at: now).apps
        let verdicts = Dictionary(uniqueKeysWithValues: judged.map { ($0.app, $0.verdicts.feedback.verdicts) })
        return ReportsDocument(since: since, aggregates: aggregates, verdicts: verdicts)
    }
}
