/// Where `catalog serve` listens (`--host`, `--port`, `--admin-host`, `--admin-port`) and whether
/// with TLS (`--tls-certificate`, `--tls-key`).
public struct ListenerConfiguration: Sendable {
    /// The address feeds, reports and health are served on.
    public var host = "127.0.0.1"
    /// Its port.
    public var port = 8080
    /// A second listener for the editor API, the dashboard and `/metrics`, which the first then
    /// refuses; nil: one port answers everything.
    public var admin: (host: String, port: Int)?
    /// The PEM certificate chain and private key files: HTTPS instead of plain HTTP; nil: plain HTTP.
    public var tls: (certificate: String, key: String)?

    /// The defaults of `catalog serve`.
    public init() {}
}
