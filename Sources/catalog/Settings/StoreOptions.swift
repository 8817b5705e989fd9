import ArgumentParser
import CatalogKit
import Foundation
import Logging
import Storage

#if canImport(Glibc)
    import Glibc
#endif

/// `--store URL` and `--store-password-file`, shared by every command that reads or writes the
/// store, read as ``Settings`` says: flag, `CATALOG_STORE`, the `--config` file, default. So
/// `catalog token create` makes its token in the store `catalog serve` reads, wherever the
/// operator put its URL.
struct StoreOptions: ParsableArguments {
    @Option(
        name: Setting.store.long,
        help: ArgumentHelp(
            "Where reports, tokens and the audit log are kept: sqlite:PATH or postgres://user[:password]@host[:port]/database. Default: \(StoreURL.default). A secret: prefer CATALOG_STORE or --store-password-file to the command line.",
            valueName: "url"))
    var storeURL: String?

    @Option(
        name: Setting.storePasswordFile.long,
        help: ArgumentHelp(
            "A file holding the PostgreSQL password (one line), used instead of one in --store. Default: none.", valueName: "file"))
    var storePasswordFile: String?

    /// The store as configured, with the password of `--store-password-file` if one is given.
    func url(_ settings: Settings) throws -> StoreURL {
        var store: StoreURL
        do {
            store = try StoreURL(
                parsing: try settings.value(.store, flag: storeURL, default: "\(StoreURL.default)") ?? "\(StoreURL.default)")
        } catch let error as StoreURLError {
            throw ValidationError(error.description)
        }
        if let file = try settings.value(.storePasswordFile, flag: storePasswordFile, default: nil as String?) {
            guard case .postgres(var connection) = store else {
                throw ValidationError("\(Setting.storePasswordFile) is for a PostgreSQL store; \(store) is not one")
            }
            guard let text = try? String(contentsOfFile: file, encoding: .utf8) else {
                throw ValidationError("cannot read the password file \(file)")
            }
            connection.password = String(text.prefix { $0 != "\n" && $0 != "\r" })
            store = .postgres(connection)
        }
        settings.record("store (effective)", store.description, "password \(store.hasPassword ? "<redacted>" : "none")")
        return store
    }

    /// Opens the configured store, runs `body` with it and closes it, whatever `body` does. A
    /// store that cannot be opened is a clear message and exit status 1.
    func withStore<Result>(_ settings: Settings, logger: Logger, _ body: (any Store) async throws -> Result) async throws -> Result {
        try await Self.withStore(try url(settings), logger: logger, body)
    }

    /// Opens the store at `url`, runs `body` with it and closes it (see the method above).
    /// `opening`, from ``startOpening(_:logger:certain:)``, is the store already being opened.
    static func withStore<Result>(
        _ url: StoreURL, logger: Logger, evenIfUnreachable: Bool = false, opening: Task<any Store, any Error>? = nil,
        _ body: (any Store) async throws -> Result
    ) async throws -> Result {
        let store: any Store
        do {
            if let opening {
                store = try await opening.value
            } else {
                store = try await openStore(url, logger: logger, evenIfUnreachable: evenIfUnreachable)
            }
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

extension StoreOptions {
    /// Starts opening a SQLite store while the caller goes on, for a command that may need it at
    /// its end (``BuildCommand``): a fresh one's schema is made on another thread, not in the
    /// command's last milliseconds. Nil for a PostgreSQL store, which is connected to only when
    /// needed, and for a SQLite file that does not exist yet unless `certain`, the caller sure to
    /// need it: no store is made for a command that may not write one. Hand the task to
    /// ``withStore(_:logger:evenIfUnreachable:opening:_:)``, or to ``discard(_:)``.
    static func startOpening(_ url: StoreURL, logger: Logger, certain: Bool) -> Task<any Store, any Error>? {
        guard case .sqlite(let path) = url, certain || FileManager.default.fileExists(atPath: path) else { return nil }
        return Task { try await openStore(url, logger: logger) }
    }

    /// Closes a store ``startOpening(_:logger:certain:)`` opened and nothing used; one that could
    /// not be opened is no error here, as nothing needed it.
    static func discard(_ opening: Task<any Store, any Error>?) async {
        guard let store = try? await opening?.value else { return }
        try? await store.close()
    }

    /// The secret `catalog serve` hashes report networks with (docs/feedback.md).
    ///
    /// SQLite: the file `file`, made on first start. PostgreSQL: the store's, so that every node
    /// on it hashes a client's network alike. A node proposes the secret of `file` if it has one
    /// (a store used before the store kept it: the file all nodes shared then), else a new one;
    /// the first proposal written is every node's. A file that disagrees with the store's is
    /// refused when named (`explicit`), and only warned of at the default path.
    ///
    /// A replica that starts while the database cannot be reached uses the copy of the store's
    /// secret it keeps in its feeds cache (`cache`), else `file`; with neither it cannot start.
    static func networkSecret(store: any Store, file: String, explicit: Bool, cache: String?, logger: Logger) async throws
        -> [UInt8]
    {
        let fileURL = URL(fileURLWithPath: file)
        guard let shared = store.postgres else { return try NetworkSecret.loadOrCreate(at: fileURL) }
        let kept = try NetworkSecret.read(fileURL)
        let copy = cache.map { URL(fileURLWithPath: $0, isDirectory: true).appendingPathComponent("report-network.secret") }
        guard shared.connectedAtOpen else {
            if let copy, let secret = try NetworkSecret.read(copy) { return secret }
            if let kept {
                logger.warning(
                    "report-network.secret.unconfirmed",
                    metadata: ["file": "\(file)", "reason": "the store cannot be reached to confirm it is the store's"])
                return kept
            }
            throw NetworkSecretError(
                description:
                    "the store \(shared.location) cannot be reached and this node has no copy of its report network secret "
                    + "(none in --feeds-cache, none at \(file)); start it once the store answers")
        }
        let agreed = try await shared.networkSecret(
            proposing: kept ?? (0..<NetworkSecret.byteCount).map { _ in UInt8.random(in: .min ... .max) })
        if let kept, kept != agreed {
            guard !explicit else {
                throw NetworkSecretError(
                    description:
                        "the report network secret in \(file) is not the one the store \(shared.location) holds; every node on one store "
                        + "must hash networks with the same secret. Leave --report-network-secret-file out to use the store's")
            }
            logger.warning(
                "report-network.secret.ignored",
                metadata: ["file": "\(file)", "reason": "it is not the secret the store holds, which every node on the store uses"])
        }
        if let copy, (try? NetworkSecret.read(copy)) != agreed { try keepCopy(agreed, at: copy) }
        return agreed
    }

    /// Writes `secret` as `NetworkSecret` reads it, readable by this user only from its first byte.
    private static func keepCopy(_ secret: [UInt8], at url: URL) throws {
        try FileManager.default.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
        let text = Array((ContentHash.hex(secret) + "\n").utf8)
        let descriptor = open(url.path, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        guard descriptor >= 0 else {
            throw NetworkSecretError(
                description: "cannot keep a copy of the report network secret at \(url.path): \(String(cString: strerror(errno)))")
        }
        defer { close(descriptor) }
        let written = text.withUnsafeBytes { write(descriptor, $0.baseAddress, $0.count) }
        guard written == text.count, fchmod(descriptor, 0o600) == 0 else {
            throw NetworkSecretError(description: "cannot keep a copy of the report network secret at \(url.path)")
        }
    }
}

/// Why `catalog serve` cannot settle on the report-network secret.
struct NetworkSecretError: Error, CustomStringConvertible {
    var description: String
}
