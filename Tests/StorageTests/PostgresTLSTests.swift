import CatalogKit
import CatalogTestSupport
import Foundation
import Logging
import Testing

@testable import Storage

/// PostgreSQL as operators run it: `sslmode` from the store URL against a real server that
/// offers TLS with a certificate this test makes (openssl: a CA, and a server certificate for
/// localhost signed by it); the password from a passfile; the pool's options.
///
/// One server for the suite, from the `.postgres(tls: true)` trait. Serialized: `isEncrypted`
/// counts every encrypted connection to the `catalog` database, so another test's connections
/// must not be open meanwhile.
@Suite(.postgres(tls: true), .serialized)
struct PostgresTLSTests {
    private let logger = Logger(label: "test")

    /// Whether the store's own connections are encrypted, as the server sees them.
    private func isEncrypted(_ store: PostgresStore, server: TestPostgres) async throws -> Bool {
        let rows = try await server.psql(
            "SELECT count(*) FROM pg_stat_ssl s JOIN pg_stat_activity a USING (pid) WHERE a.datname = 'catalog' AND s.ssl")
        return (Int(rows.trimmingCharacters(in: .whitespacesAndNewlines)) ?? 0) > 0
    }

    @Test func sslModesAgainstAServerWithACertificate() async throws {
        // The trait made the certificates (in a folder it removes) and started the server with them.
        let files = try TestPostgres.currentCertificates
        let server = try TestPostgres.current
        let base = "postgres://\(TestPostgres.user):\(TestPostgres.password)@localhost:\(server.port)/catalog"

        // verify-full with the CA that signed the server's certificate: connected, encrypted.
        let verified = try await PostgresStore.open(
            try StoreURL.address(base + "?sslmode=verify-full&sslrootcert=\(files.ca.path)&pool_size=2&statement_timeout=5000"),
            logger: logger)
        try await verified.ping()
        #expect(try await isEncrypted(verified, server: server))
        try await verified.close()

        // verify-full with another CA: refused, with the reason.
        do {
            let store = try await PostgresStore.open(
                try StoreURL.address(base + "?sslmode=verify-full&sslrootcert=\(files.otherCA.path)"), logger: logger,
                connectTimeout: .seconds(5))
            try await store.close()
            Issue.record("a certificate from an untrusted CA was accepted")
        } catch {
            #expect("\(error)".contains("cannot connect"), "\(error)")
        }

        // verify-full for a host the certificate does not name (it names localhost, not
        // 127.0.0.1, though both reach the server): refused.
        do {
            let store = try await PostgresStore.open(
                try StoreURL.address(
                    "postgres://\(TestPostgres.user):\(TestPostgres.password)@127.0.0.1:\(server.port)/catalog?sslmode=verify-full&sslrootcert=\(files.ca.path)"
                ),
                logger: logger, connectTimeout: .seconds(5))
            try await store.close()
            Issue.record("a certificate for another host was accepted")
        } catch {
            #expect("\(error)".contains("cannot connect"), "\(error)")
        }
        // verify-ca checks the signature only: the same host is accepted.
        let signed = try await PostgresStore.open(
            try StoreURL.address(
                "postgres://\(TestPostgres.user):\(TestPostgres.password)@127.0.0.1:\(server.port)/catalog?sslmode=verify-ca&sslrootcert=\(files.ca.path)"
            ),
            logger: logger)
        try await signed.ping()
        try await signed.close()

        // require, unchecked: encrypted. disable: plain.
        let required = try await PostgresStore.open(try StoreURL.address(base + "?sslmode=require"), logger: logger)
        try await required.ping()
        try await required.close()
        let plain = try await PostgresStore.open(try StoreURL.address(base + "?sslmode=disable"), logger: logger)
        try await plain.ping()
        try await plain.close()
    }

    /// The password from a passfile (`.pgpass` lines, wildcards and escapes), never in the URL.
    @Test func passwordFromAPassfile() async throws {
        let server = try TestPostgres.current
        let passfile = FileManager.default.temporaryDirectory.appendingPathComponent("pgpass-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: passfile) }
        try Data("# comment\nother:*:*:*:wrong\n127.0.0.1:\(server.port):*:\(TestPostgres.user):\(TestPostgres.password)\n".utf8)
            .write(to: passfile)
        let store = try await PostgresStore.open(
            try StoreURL.address("postgres://\(TestPostgres.user)@127.0.0.1:\(server.port)/catalog?passfile=\(passfile.path)"),
            logger: logger)
        try await store.ping()
        try await store.close()
        let address = try StoreURL.address("postgres://u@h:5432/d")
        #expect(PostgresPassword.password(in: #"h:5432:d:u:a\:b\\c"#, for: address) == #"a:b\c"#)
        #expect(PostgresPassword.password(in: "h:5433:d:u:x", for: address) == nil)
    }

    @Test func badParametersAreClearErrors() {
        for (url, message) in [
            ("postgres://u@h/d?sslmode=maybe", "sslmode 'maybe'"), ("postgres://u@h/d?pool_size=0", "pool_size"),
            ("postgres://u@h/d?sslcert=x", "unknown parameter 'sslcert'"),
        ] {
            let error = #expect(throws: (any Error).self) { try StoreURL(parsing: url) }
            if let error { #expect("\(error)".contains(message), "\(error)") }
        }
    }
}

extension StoreURL {
    /// The PostgreSQL address of `url`, for tests.
    static func address(_ url: String) throws -> PostgresAddress {
        guard case .postgres(let address) = try StoreURL(parsing: url) else { throw StoreURLError("not PostgreSQL") }
        return address
    }
}
