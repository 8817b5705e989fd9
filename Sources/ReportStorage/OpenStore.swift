import CatalogKit
import Logging

/// Opens the store `url` names, migrated and ready. Callers `close()` it when done.
///
/// `evenIfUnreachable`: a PostgreSQL server that cannot be reached yet is not an error (see
/// ``PostgresReportStore/open(_:logger:connectTimeout:evenIfUnreachable:)``).
public func openReportStore(_ url: StoreURL, logger: Logger, evenIfUnreachable: Bool = false) async throws -> any CatalogStore {
    switch url {
    case .sqlite(let path):
        return try await SQLiteReportStore.open(path: path)
    case .postgres(let address):
        return try await PostgresReportStore.open(address, logger: logger, evenIfUnreachable: evenIfUnreachable)
    }
}
