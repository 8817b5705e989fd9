import CatalogKit
import Foundation
import PropertyList

/// A product diff as the editor API answers it: what `catalog diff` and `build --dry-run` print
/// (the `Diff` schema of `openapi.yaml`).
struct DiffAnswer: Codable, Sendable, Equatable {
    /// A product whose definition changed, and how.
    struct Change: Codable, Sendable, Equatable {
        var id: String
        var details: [String]
    }

    /// An identifier held back by its verdict, and why.
    struct Quarantine: Codable, Sendable, Equatable {
        var id: String
        var reason: String
    }

    var added: [String]
    var removed: [String]
    var released: [String]
    var changed: [Change]
    var quarantined: [Quarantine]

    init(added: [String], removed: [String], released: [String], changed: [Change], quarantined: [Quarantine]) {
        self.added = added
        self.removed = removed
        self.released = released
        self.changed = changed
        self.quarantined = quarantined
    }

    init(_ diff: ProductDiff) {
        self.init(
            added: diff.added, removed: diff.removed, released: diff.released,
            changed: diff.changed.map { Change(id: $0.id, details: $0.details) },
            quarantined: diff.quarantined.map { Quarantine(id: $0.id, reason: $0.reason) })
    }
}

/// `POST /v1/admin/apps/{app}/publish`: the publication, or what it would be (`dryRun`).
struct PublicationAnswer: Codable, Sendable, Equatable {
    var app: String
    var dryRun: Bool
    var unchanged: Bool
    var revision: Int
    var diff: DiffAnswer
    var sourceRevision: String
}

/// `GET /v1/admin/apps/{app}/diff`: the two sides compared and the diff. `from` is null when `to` is
/// the first revision (it added everything); a side is a revision number or `"sources"`.
struct HistoryDiffAnswer: Encodable, Sendable {
    var app: String
    var from: CatalogWorkflow.DiffSide?
    var to: CatalogWorkflow.DiffSide
    var diff: DiffAnswer

    private enum CodingKeys: String, CodingKey { case app, from, to, diff }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(app, forKey: .app)
        // Written as null, not left out: the schema requires `from`.
        if let from { try Self.encode(from, forKey: .from, in: &container) } else { try container.encodeNil(forKey: .from) }
        try Self.encode(to, forKey: .to, in: &container)
        try container.encode(diff, forKey: .diff)
    }

    private static func encode(
        _ side: CatalogWorkflow.DiffSide, forKey key: CodingKeys, in container: inout KeyedEncodingContainer<CodingKeys>
    ) throws {
        switch side {
        case .revision(let number): try container.encode(number, forKey: key)
        case .sources: try container.encode("sources", forKey: key)
        }
    }
}

/// `POST /v1/admin/apps/{app}/revisions/{revision}/rollback`: the revision restored, the new one, and
/// what the rollback wrote into the sources.
struct RollbackAnswer: Codable, Sendable, Equatable {
    var app: String
    var restored: Int
    var revision: Int
    var unchanged: Bool
    var written: String
    var removed: [String]
    var keptRetired: [String]
    var diff: DiffAnswer
    var sourceRevision: String
}

/// `POST …/feedback/{id}/release` and `…/quarantine`: `{"released": id, …}` or `{"quarantined": id, …}`,
/// what the decision changed, and the new source revision.
struct DecisionAnswer: Codable, Sendable, Equatable {
    /// The decision, which names the member that holds the identifier.
    enum Decision: String, Codable, Sendable, CaseIterable {
        case released, quarantined
    }

    var decision: Decision
    var id: String
    var summary: String
    var sourceRevision: String

    init(decision: Decision, id: String, summary: String, sourceRevision: String) {
        self.decision = decision
        self.id = id
        self.summary = summary
        self.sourceRevision = sourceRevision
    }

    private struct Key: CodingKey {
        var stringValue: String
        var intValue: Int? { nil }
        init(_ name: String) { stringValue = name }
        init?(stringValue: String) { self.init(stringValue) }
        init?(intValue: Int) { nil }
    }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: Key.self)
        try container.encode(id, forKey: Key(decision.rawValue))
        try container.encode(summary, forKey: Key("summary"))
        try container.encode(sourceRevision, forKey: Key("sourceRevision"))
    }

    init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: Key.self)
        guard let decision = Decision.allCases.first(where: { container.contains(Key($0.rawValue)) }) else {
            throw DecodingError.dataCorrupted(.init(codingPath: decoder.codingPath, debugDescription: "neither released nor quarantined"))
        }
        self.init(
            decision: decision, id: try container.decode(String.self, forKey: Key(decision.rawValue)),
            summary: try container.decode(String.self, forKey: Key("summary")),
            sourceRevision: try container.decode(String.self, forKey: Key("sourceRevision")))
    }
}

/// `GET /v1/admin/apps`: every app with sources, its source revision and its published revision
/// (null when it was never published).
struct EditorAppList: Codable, Sendable, Equatable {
    /// One app.
    struct App: Codable, Sendable, Equatable {
        var app: String
        var sourceRevision: String
        var publishedRevision: Int?

        private enum CodingKeys: String, CodingKey { case app, sourceRevision, publishedRevision }

        init(app: String, sourceRevision: String, publishedRevision: Int?) {
            self.app = app
            self.sourceRevision = sourceRevision
            self.publishedRevision = publishedRevision
        }

        /// Written as null, not left out: the schema (and the dashboard) expect the member.
        func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(app, forKey: .app)
            try container.encode(sourceRevision, forKey: .sourceRevision)
            try container.encode(publishedRevision, forKey: .publishedRevision)
        }
    }

    var apps: [App]
}

/// `GET /v1/admin/apps/{app}/reports/daily`: one identifier's reports per UTC day, oldest first.
struct DailyReportsAnswer: Codable, Sendable, Equatable {
    /// One day.
    struct Day: Codable, Sendable, Equatable {
        /// `YYYY-MM-DD`.
        var day: String
        var reports: Int
    }

    var app: String
    var identifier: String
    var days: [Day]
}

/// One diagnostic as `catalog validate` reports it (the `Diagnostic` schema of `openapi.yaml`): in an
/// app's state and in a 422's `error.diagnostics`.
struct DiagnosticAnswer: Codable, Sendable, Equatable {
    var severity: String
    var file: String
    var line: Int
    var column: Int
    var message: String
    /// The whole line as `catalog validate` prints it.
    var text: String

    init(_ diagnostic: Diagnostic) {
        severity = diagnostic.severity.rawValue
        file = diagnostic.file
        line = diagnostic.position.line
        column = diagnostic.position.column
        message = diagnostic.message
        text = diagnostic.description
    }

    /// The diagnostics as a JSON array, for an error body's `diagnostics`.
    static func json(_ diagnostics: [Diagnostic]) -> [UInt8] {
        ServiceJSON.encode(diagnostics.map(DiagnosticAnswer.init))
    }
}

/// `GET /v1/admin/apps/{app}`, and a 412's `error.current`: one app as an editor sees it (the
/// `AppState` schema). Its `json` holds the products as the feed writer wrote them (see
/// ``ServiceJSON/encode(_:appending:)`` for why they are not re-encoded).
struct AppStateAnswer: Codable, Sendable, Equatable {
    /// The app's current revision.
    struct Published: Codable, Sendable, Equatable {
        var revision: Int
        /// ISO 8601, UTC, to the second.
        var publishedAt: String
    }

    /// One verdict of the feedback file.
    struct Verdict: Codable, Sendable, Equatable {
        /// `suspect` or `quarantined`.
        var status: String
        var reason: String
        /// ISO 8601, UTC, to the second.
        var since: String
    }

    var app: String
    var sourceRevision: String
    var files: [String]
    var editable: Bool
    var notEditableReason: String?
    /// Null when the app was never published.
    var published: Published?
    /// By identifier.
    var verdicts: [String: Verdict]
    var diagnostics: [DiagnosticAnswer]
    /// Each product's JSON (`FeedRenderer.encode(_:for: .snapshot)`): written by ``json``, not by the encoder.
    var products: [[UInt8]] = []

    private enum CodingKeys: String, CodingKey {
        case app, sourceRevision, files, editable, notEditableReason, published, verdicts, diagnostics
    }

    init(_ state: CatalogWorkflow.AppState) {
        app = state.app
        sourceRevision = state.sourceRevision
        files = state.files
        editable = state.notEditable == nil
        notEditableReason = state.notEditable
        published = state.published.map { Published(revision: $0.revision, publishedAt: $0.publishedAt.iso8601) }
        verdicts = state.feedback.verdicts.mapValues {
            Verdict(status: $0.status.rawValue, reason: $0.reason, since: $0.since.iso8601)
        }
        diagnostics = state.diagnostics.map(DiagnosticAnswer.init)
        products = state.products.map { FeedRenderer.encode($0, for: .snapshot) }
    }

    /// Written as null, not left out: the schema requires `published`.
    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(app, forKey: .app)
        try container.encode(sourceRevision, forKey: .sourceRevision)
        try container.encode(files, forKey: .files)
        try container.encode(editable, forKey: .editable)
        try container.encodeIfPresent(notEditableReason, forKey: .notEditableReason)
        try container.encode(published, forKey: .published)
        try container.encode(verdicts, forKey: .verdicts)
        try container.encode(diagnostics, forKey: .diagnostics)
    }

    /// The answer's bytes, products included.
    var json: [UInt8] { ServiceJSON.encode(self, appending: [("products", ServiceJSON.array(products))]) }
}

/// A product created, changed or retired (the `Edited` response of `openapi.yaml`): the product as the
/// sources now define it, the file it is in, and the new source revision.
struct EditAnswer: Codable, Sendable, Equatable {
    var file: String
    var sourceRevision: String
    /// The product's JSON (`FeedRenderer.encode(_:for: .snapshot)`): written by ``json``, not by the encoder.
    var product: [UInt8] = []

    private enum CodingKeys: String, CodingKey { case file, sourceRevision }

    init(product: Product, file: String, sourceRevision: String) {
        self.product = FeedRenderer.encode(product, for: .snapshot)
        self.file = file
        self.sourceRevision = sourceRevision
    }

    /// The answer's bytes, the product included.
    var json: [UInt8] { ServiceJSON.encode(self, appending: [("product", product)]) }
}
