import CatalogKit
import PostgresNIO
import Time

/// The report-network secret kept in a PostgreSQL store (docs/feedback.md): every node on one
/// store hashes a client's network with the same key, so that one network counts once however
/// many replicas its reports reach. SQLite has no replicas and keeps its secret in a file.
extension PostgresStore {
    /// The store's secret. When the store holds none yet, `proposal` becomes it: written with
    /// `INSERT … ON CONFLICT DO NOTHING` and read back, so that of nodes starting together the
    /// first to commit decides and every one reads the same. Never replaced once written: a new
    /// secret would rename every network.
    public func networkSecret(proposing proposal: [UInt8]) async throws -> [UInt8] {
        let hex = ContentHash.hex(proposal)
        let now = Timestamp.now.secondsSince1970
        try await transaction("cannot record the report network secret") { connection, logger in
            try await connection.execute(
                "INSERT INTO network_secret (id, secret, created_at) VALUES (1, \(hex), \(now)) ON CONFLICT (id) DO NOTHING",
                logger: logger)
        }
        let stored = try await withStoreErrors("cannot read the report network secret") {
            try await client.withConnection { connection in
                var secret: String?
                for try await text in try await connection.query("SELECT secret FROM network_secret WHERE id = 1", logger: logger)
                    .decode(String.self)
                {
                    secret = text
                }
                return secret
            }
        }
        guard let stored, stored.utf8.count == NetworkSecret.byteCount * 2, let bytes = ContentHash.bytes(hex: stored) else {
            throw PostgresStoreError(
                location: location, doing: "cannot use the report network secret",
                SecretUnreadable(description: "the row in network_secret is not \(NetworkSecret.byteCount * 2) hexadecimal digits"))
        }
        return bytes
    }
}

private struct SecretUnreadable: Error, CustomStringConvertible {
    var description: String
}
