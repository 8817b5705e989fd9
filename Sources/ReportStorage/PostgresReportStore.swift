import CatalogKit
import Logging
import PropertyList

/// Reports in PostgreSQL, shared by several `catalog serve` replicas. Not built yet.
public final class PostgresReportStore: ReportStore {
    public static func open(_ address: StoreURL.PostgresAddress, logger: Logger) async throws -> PostgresReportStore {
        throw StoreSchemaError(description: "the PostgreSQL store is not built yet")
    }

    public func store(_ reports: [InvalidIdentifierReport]) async throws -> [StoreOutcome] { [] }
    public func aggregate(_ query: AggregateQuery) async throws -> [ReportAggregate] { [] }
    public func prune(receivedBefore moment: Timestamp) async throws -> Int { 0 }
    public func ping() async throws {}
    public func close() async throws {}
}
