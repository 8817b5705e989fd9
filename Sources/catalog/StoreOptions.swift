import ArgumentParser
import CatalogKit
import Logging
import ReportStorage

/// `--store URL`, shared by every command that reads or writes reports.
struct StoreOptions: ParsableArguments {
    @Option(
        name: .customLong("store"),
        help: ArgumentHelp("Where reports are kept: sqlite:PATH or postgres://user[:password]@host[:port]/database.", valueName: "url"))
    var storeURL: String = "\(StoreURL.default)"

    func validate() throws {
        _ = try url
    }

    var url: StoreURL {
        get throws {
            do {
                return try StoreURL(parsing: storeURL)
            } catch {
                throw ValidationError(error.description)
            }
        }
    }

    /// Opens the store, runs `body` with it and closes it, whatever `body` does. A store that
    /// cannot be opened is a clear message and exit status 1.
    func withStore<Result>(logger: Logger, _ body: (any CatalogStore) async throws -> Result) async throws -> Result {
        try await Self.withStore(try url, logger: logger, body)
    }

    /// Opens the store at `url`, runs `body` with it and closes it (see the method above).
    static func withStore<Result>(
        _ url: StoreURL, logger: Logger, evenIfUnreachable: Bool = false, _ body: (any CatalogStore) async throws -> Result
    ) async throws -> Result {
        let store: any CatalogStore
        do {
            store = try await openReportStore(url, logger: logger, evenIfUnreachable: evenIfUnreachable)
        } catch {
            printError("cannot open the report store \(url): \(error)")
            throw ExitCode(1)
        }
        do {
            let result = try await body(store)
            try await store.close()
            return result
        } catch {
            try? await store.close()
            throw error
        }
    }
}
