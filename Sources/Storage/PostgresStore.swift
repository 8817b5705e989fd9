import CatalogKit
import Foundation
import Logging
import PostgresNIO
import Synchronization
import Time

/// Reports in PostgreSQL: one store that several `catalog serve` replicas share, with the
/// schema and semantics of `SQLiteStore` (docs/storage.md).
///
/// The store owns a `PostgresClient` and the task that runs it for the store's whole life;
/// `close()` ends both. Every value reaches the server as a bound parameter.
public final class PostgresStore: ReportStore {
    let client: PostgresClient
    /// `client.run()`: the pool hands out no connection unless it runs.
    private let running: Task<Void, Never>
    let logger: Logger
    private let closed = Atomic(false)
    /// The URL without its password, for messages.
    public let location: String
    /// Whether the server answered when the store was opened; false only for a store opened
    /// `evenIfUnreachable` while the server could not be reached.
    public let connectedAtOpen: Bool

    /// Connects, checks that commits are durable and migrates, then starts the connection pool.
    ///
    /// Fails within about `connectTimeout` when the server cannot be reached or refuses the
    /// credentials or the database, with the server's reason and the URL without its password.
    ///
    /// With `evenIfUnreachable`, a server that cannot be reached is a warning, not an error: the
    /// pool connects once it can, and until then every call fails. For a serving replica that has
    /// a tree of its own to serve meanwhile; it migrates nothing then (the editor node does).
    public static func open(
        _ address: StoreURL.PostgresAddress, logger: Logger, connectTimeout: Duration = .seconds(10), evenIfUnreachable: Bool = false
    ) async throws -> PostgresStore {
        let location = StoreURL.postgres(address).description
        let password = address.password ?? PostgresPassword.lookUp(for: address)
        let tls: TLSConfiguration?
        do {
            tls = try tlsConfiguration(address)
        } catch {
            throw PostgresStoreError(location: location, doing: "cannot read the root certificate \(address.rootCertificate ?? "")", error)
        }
        let startup = address.statementTimeoutMilliseconds.map { [("statement_timeout", String($0))] } ?? []

        // One connection of our own first, not the pool's: the pool retries an unreachable server
        // for a minute and then fails without the reason, and an operator needs the reason now.
        // Its connect timeout bounds the TCP connection and the startup and authentication.
        let setupTLS: PostgresConnection.Configuration.TLS =
            switch (address.sslMode, tls) {
            case (.disable, _), (_, nil): .disable
            case (.prefer, let tls?): .prefer(try NIOSSLContext(configuration: tls))
            case (_, let tls?): .require(try NIOSSLContext(configuration: tls))
            }
        var setup = PostgresConnection.Configuration(
            host: address.host, port: address.port, username: address.user, password: password,
            database: address.database, tls: setupTLS)
        setup.options.connectTimeout = .nanoseconds(Int64(connectTimeout / .nanoseconds(1)))
        setup.options.additionalStartupParameters = startup
        var connected = true
        do {
            let connection = try await PostgresConnection.connect(configuration: setup, id: 0, logger: logger)
            do {
                try await requireDurableCommits(connection, logger: logger)
                try await migrate(connection, logger: logger)
                try await connection.close()
            } catch {
                try? await connection.close()
                throw PostgresStoreError(location: location, doing: "cannot open the store", error)
            }
        } catch let error as PostgresStoreError {
            throw error
        } catch {
            let failure = PostgresStoreError(location: location, doing: "cannot connect", error)
            guard evenIfUnreachable else { throw failure }
            connected = false
            logger.warning("store.unreachable", metadata: ["error": "\(failure)"])
        }

        let poolTLS: PostgresClient.Configuration.TLS =
            switch (address.sslMode, tls) {
            case (.disable, _), (_, nil): .disable
            case (.prefer, let tls?): .prefer(tls)
            case (_, let tls?): .require(tls)
            }
        var configuration = PostgresClient.Configuration(
            host: address.host, port: address.port, username: address.user, password: password,
            database: address.database, tls: poolTLS)
        configuration.options.connectTimeout = connectTimeout
        configuration.options.maximumConnections = address.poolSize
        configuration.options.additionalStartupParameters = startup
        let client = PostgresClient(configuration: configuration, backgroundLogger: logger)
        // Started immediately, on this thread, so that `run()` has marked the client running
        // before anything leases a connection: with a plain `Task` the first query could come
        // first, and PostgresNIO warned on every command that run() had not been called.
        let running = Task.immediate { await client.run() }
        logger.info("report store opened", metadata: ["store.url": "\(location)"])
        return PostgresStore(client: client, running: running, logger: logger, location: location, connectedAtOpen: connected)
    }

    private init(client: PostgresClient, running: Task<Void, Never>, logger: Logger, location: String, connectedAtOpen: Bool) {
        self.client = client
        self.running = running
        self.logger = logger
        self.location = location
        self.connectedAtOpen = connectedAtOpen
    }

    public func ping() async throws {
        try await withStoreErrors("does not answer") {
            try await client.withConnection { try await $0.execute("SELECT 1", logger: logger) }
        }
    }

    /// Stops the pool and waits until its connections are closed.
    public func close() async throws {
        closed.store(true, ordering: .relaxed)
        running.cancel()
        await running.value
    }

    /// Runs `body` in a transaction and returns once it is committed.
    ///
    /// Explicitly, not as one statement's implicit transaction: PostgresNIO answers a query when
    /// the server reports the statement complete, and an implicit transaction commits only after
    /// that. The reply to `COMMIT` comes once the commit is flushed (synchronous_commit).
    func transaction<Result: Sendable>(
        _ failure: String, _ body: @escaping @Sendable (PostgresConnection, Logger) async throws -> Result
    ) async throws -> Result {
        let logger = logger
        return try await withStoreErrors(failure) {
            try await client.withTransaction(logger: logger) { connection in try await body(connection, logger) }
        }
    }

    func withStoreErrors<Result>(_ failure: String, _ body: () async throws -> Result) async throws -> Result {
        guard !closed.load(ordering: .relaxed) else { throw PostgresStoreError(location: location, doing: failure, StoreClosed()) }
        do {
            return try await body()
        } catch let error as CallerError {
            throw error.error
        } catch let error as PostgresTransactionError where error.closureError is CallerError {
            // The transaction rolled back because the caller's own code refused (a blob not its
            // digest): that refusal is the error, not the store.
            throw (error.closureError as? CallerError)?.error ?? error
        } catch {
            throw PostgresStoreError(location: location, doing: failure, error)
        }
    }
}

/// A PostgreSQL store's failure: what it could not do, where (the URL without its password) and
/// the reason, from the server when it gave one.
public struct PostgresStoreError: Error, CustomStringConvertible {
    public let description: String

    init(location: String, doing failure: String, _ error: any Error) {
        description = "PostgreSQL \(location): \(failure): \(Self.reason(error))"
    }

    /// PostgresNIO's errors describe themselves generically on purpose (a query's values could
    /// leak into logs); the server's message and SQLSTATE name no values and say what went wrong.
    private static func reason(_ error: any Error) -> String {
        switch error {
        case let error as PSQLError:
            if let message = error.serverInfo?[.message] {
                return "\(message) (SQLSTATE \(error.serverInfo?[.sqlState] ?? "?"))"
            }
            if let underlying = error.underlying { return reason(underlying) }
            switch error.code {
            case .serverClosedConnection: return "the server closed the connection"
            case .poolClosed: return "the store is closed"
            default: return "\(error.code)"
            }
        case let error as PostgresTransactionError:
            if let cause = error.beginError ?? error.closureError ?? error.commitError { return reason(cause) }
            return "the transaction failed"
        case let error as NIOConnectionError:
            // The errors per address say why (connection refused); the wrapper only lists them.
            let causes = Set(error.connectionErrors.map { reason($0.error) }).sorted()
            return causes.isEmpty ? "\(error)" : causes.joined(separator: "; ")
        case let error as IOError:
            return String(cString: strerror(error.errnoCode))
        case let error as NIOSSLError:
            // BoringSSL's messages end with the path of its source file on the build machine.
            let text = "\(error)".replacing(#/\sat\s/[^\])]*/#, with: "")
            guard text.contains("CERTIFICATE_VERIFY_FAILED") else { return "the TLS handshake failed: \(text)" }
            return "the server's certificate is not signed by an authority this node trusts (CERTIFICATE_VERIFY_FAILED): "
                + "name the authority's PEM file with sslrootcert=FILE in the store URL, or lower sslmode (docs/operations.md)"
        case let error as NIOSSLExtraError where error == .failedToValidateHostname:
            return "the server's certificate does not name the host of the store URL: connect by a name it holds, or use sslmode=verify-ca"
        default:
            return "\(error)"
        }
    }
}

/// An error of the caller's own code that a store method ran (a receiver of rows): thrown as it
/// is, for the caller to recognize, rather than as a failure of the store.
struct CallerError: Error {
    var error: any Error
}

private struct StoreClosed: Error, CustomStringConvertible {
    var description: String { "the store is closed" }
}

extension PostgresConnection {
    /// Runs `query` to its end, for statements whose rows do not matter: the connection serves
    /// the next query only once this one's rows are read.
    func execute(_ query: PostgresQuery, logger: Logger) async throws {
        for try await _ in try await self.query(query, logger: logger) {}
    }
}

/// The TLS of `sslmode`: nil for `disable`; no certificate check for `prefer` and `require` (as
/// libpq); the root certificates of `sslrootcert` (else the system's) for `verify-ca`, and the host
/// name as well for `verify-full`.
private func tlsConfiguration(_ address: StoreURL.PostgresAddress) throws -> TLSConfiguration? {
    var tls = TLSConfiguration.makeClientConfiguration()
    switch address.sslMode {
    case .disable: return nil
    case .prefer, .require: tls.certificateVerification = .none
    case .verifyCA: tls.certificateVerification = .noHostnameVerification
    case .verifyFull: tls.certificateVerification = .fullVerification
    }
    if let file = address.rootCertificate, address.sslMode == .verifyCA || address.sslMode == .verifyFull {
        tls.trustRoots = .certificates(try NIOSSLCertificate.fromPEMFile(file))
    }
    return tls
}
