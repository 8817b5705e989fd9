import Foundation

/// Where reports are stored, as given by `--store`: `sqlite:PATH` (the default,
/// `sqlite:var/catalog.sqlite`) or `postgres://user[:password]@host[:port]/database[?parameters]`.
///
/// PostgreSQL parameters, as libpq spells them where it has them: `sslmode` (`disable`, `prefer`,
/// `require`, `verify-ca`, `verify-full`; the default is `verify-full` for a host on another
/// machine and `prefer` for a loopback one, see ``SSLMode/default(for:)``), `sslrootcert` (a PEM
/// file of the certificates to trust; the system's by default), `passfile` (a `.pgpass` file), and
/// of this tool's own `pool_size` (connections, default 20) and `statement_timeout` (milliseconds).
///
/// No message shows a password: errors quote the URL as ``redacted(_:)`` leaves it.
public enum StoreURL: Sendable, Hashable, CustomStringConvertible {
    case sqlite(path: String)
    case postgres(PostgresAddress)

    public struct PostgresAddress: Sendable, Hashable {
        public var host: String
        public var port: Int
        public var user: String
        public var password: String?
        public var database: String
        public var sslMode: SSLMode = .prefer
        public var rootCertificate: String?
        public var passfile: String?
        public var poolSize = 20
        public var statementTimeoutMilliseconds: Int?
    }

    /// libpq's `sslmode`, the modes this store supports.
    public enum SSLMode: String, Sendable, Hashable, CaseIterable {
        /// Plain TCP.
        case disable
        /// TLS when the server offers it, its certificate unchecked.
        case prefer
        /// TLS or no connection, the certificate unchecked.
        case require
        /// TLS with a certificate signed by a trusted authority, for any host name.
        case verifyCA = "verify-ca"
        /// TLS with a trusted certificate for the host connected to.
        case verifyFull = "verify-full"

        /// The mode when the URL names none. A server on another machine is reached over a
        /// network where an impostor can answer, so its certificate is checked for its name; on
        /// the loopback interface (`localhost`, 127.0.0.0/8, `::1`) or a Unix socket nobody sits
        /// in between, and libpq's `prefer` is kept. `sslmode=` in the URL lowers or raises it.
        public static func `default`(for host: String) -> SSLMode {
            StoreURL.isLoopback(host) ? .prefer : .verifyFull
        }
    }

    /// Whether `host` is this machine: `localhost`, an address of 127.0.0.0/8, `::1`, or a Unix
    /// socket's folder (a path).
    static func isLoopback(_ host: String) -> Bool {
        let bare = host.hasPrefix("[") && host.hasSuffix("]") ? String(host.dropFirst().dropLast()) : host
        if bare.hasPrefix("/") || bare.lowercased() == "localhost" || bare.lowercased().hasSuffix(".localhost") { return true }
        var v4 = in_addr()
        if inet_pton(AF_INET, bare, &v4) == 1 { return UInt32(bigEndian: v4.s_addr) >> 24 == 127 }
        var v6 = in6_addr()
        if inet_pton(AF_INET6, bare, &v6) == 1 {
            return withUnsafeBytes(of: &v6) { $0.prefix(15).allSatisfy { $0 == 0 } && $0[15] == 1 }
        }
        return false
    }

    /// `text` with the password of its user part, if any, replaced by `<redacted>`: for messages
    /// about a store URL, even one too broken to parse. It errs on the side of hiding too much
    /// (up to the last `@`).
    public static func redacted(_ text: String) -> String {
        guard let scheme = text.range(of: "://"), let at = text.range(of: "@", options: .backwards),
            scheme.upperBound <= at.lowerBound,
            let colon = text[scheme.upperBound..<at.lowerBound].firstIndex(of: ":")
        else { return text }
        return String(text[..<text.index(after: colon)]) + "<redacted>" + String(text[at.lowerBound...])
    }

    public static let `default` = StoreURL.sqlite(path: "var/catalog.sqlite")

    /// Parses `text`, or throws a message that says what a valid one looks like.
    public init(parsing text: String) throws(StoreURLError) {
        if text.hasPrefix("sqlite:") {
            var path = String(text.dropFirst("sqlite:".count))
            // Accept the URL spelling `sqlite:///abs/path` too.
            if path.hasPrefix("//") { path.removeFirst(2) }
            guard !path.isEmpty else { throw StoreURLError("'\(text)' names no file; use sqlite:PATH, e.g. sqlite:var/catalog.sqlite") }
            self = .sqlite(path: path)
            return
        }
        if text.hasPrefix("postgres://") || text.hasPrefix("postgresql://") {
            let shown = Self.redacted(text)
            guard let components = URLComponents(string: text), let host = components.host, !host.isEmpty else {
                throw StoreURLError("'\(shown)' is not a valid PostgreSQL URL; use postgres://user@host:port/database")
            }
            let database = String(components.path.drop(while: { $0 == "/" }))
            guard !database.isEmpty else { throw StoreURLError("'\(shown)' names no database; use postgres://user@host:port/database") }
            guard let user = components.user, !user.isEmpty else {
                throw StoreURLError("'\(shown)' names no user; use postgres://user@host:port/database")
            }
            var address = PostgresAddress(
                host: host, port: components.port ?? 5432, user: user, password: components.password, database: database)
            var mode: SSLMode?
            for item in components.queryItems ?? [] {
                let value = item.value ?? ""
                switch item.name {
                case "sslmode":
                    guard let chosen = SSLMode(rawValue: value) else {
                        throw StoreURLError(
                            "sslmode '\(value)' is not one of \(SSLMode.allCases.map(\.rawValue).joined(separator: ", "))")
                    }
                    mode = chosen
                case "sslrootcert": address.rootCertificate = value
                case "passfile": address.passfile = value
                case "pool_size":
                    guard let size = Int(value), (1...1000).contains(size) else {
                        throw StoreURLError("pool_size '\(value)' is not 1 to 1000")
                    }
                    address.poolSize = size
                case "statement_timeout":
                    guard let milliseconds = Int(value), milliseconds >= 0 else {
                        throw StoreURLError("statement_timeout '\(value)' is not a number of milliseconds")
                    }
                    address.statementTimeoutMilliseconds = milliseconds
                default:
                    throw StoreURLError(
                        "unknown parameter '\(item.name)' in the store URL; known: sslmode, sslrootcert, passfile, pool_size, statement_timeout"
                    )
                }
            }
            address.sslMode = mode ?? .default(for: host)
            self = .postgres(address)
            return
        }
        throw StoreURLError("unknown store '\(Self.redacted(text))'; use sqlite:PATH or postgres://user@host:port/database")
    }

    /// Where the secret that report networks are hashed with is kept unless configured: beside a
    /// SQLite file, never inside it, so that the file alone cannot be matched to addresses. A
    /// PostgreSQL store keeps its own (`PostgresStore.networkSecret(proposing:)`), since every
    /// node on it must use one; a file at this path is only proposed to a store that has none.
    public var defaultNetworkSecretPath: String {
        switch self {
        case .sqlite(let path): URL(fileURLWithPath: path).deletingLastPathComponent().appendingPathComponent("report-network.secret").path
        case .postgres: "var/report-network.secret"
        }
    }

    /// Whether the URL carries a password (never shown: see `description`).
    public var hasPassword: Bool {
        if case .postgres(let address) = self { return address.password != nil }
        return false
    }

    /// The URL without its password, for logs and messages.
    public var description: String {
        switch self {
        case .sqlite(let path): "sqlite:\(path)"
        case .postgres(let address):
            "postgres://\(address.user)@\(address.host):\(address.port)/\(address.database)"
                + (address.sslMode == .default(for: address.host) ? "" : "?sslmode=\(address.sslMode.rawValue)")
        }
    }
}

public struct StoreURLError: Error, CustomStringConvertible {
    public let description: String
    init(_ description: String) { self.description = description }
}
