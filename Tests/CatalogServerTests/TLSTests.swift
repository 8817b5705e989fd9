import CatalogKit
import CatalogServer
import CatalogTestSupport
import Foundation
import Hummingbird
import HummingbirdTesting
import Logging
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// `--tls-certificate` / `--tls-key`: HTTPS with HTTP/2 and HTTP/1.1 by ALPN, exact caching over
/// both, and a renewed certificate served without a restart. curl is the client, trusting only
/// the CA this test makes.
@Suite struct TLSTests {
    /// `curl` on `url` trusting `ca`: the status, the HTTP version and the ETag it saw. Waited for
    /// on a thread of its own: the server under test answers on the test threads, and a test
    /// thread blocked on curl could leave it none (curl then times out).
    static func curl(_ url: String, ca: URL, version: String, headers: [String] = []) async throws -> (
        status: Int, version: String, etag: String?
    ) {
        try await offThePool { try blockingCurl(url, ca: ca, version: version, headers: headers) }
    }

    private static func blockingCurl(_ url: String, ca: URL, version: String, headers: [String]) throws -> (
        status: Int, version: String, etag: String?
    ) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/curl")
        process.arguments =
            ["-sS", "--max-time", "60", "--cacert", ca.path, version, "-o", "/dev/null", "-D", "-", "-w", "\n%{http_code} %{http_version}"]
            + headers.flatMap { ["-H", $0] } + [url]
        let output = Pipe()
        process.standardOutput = output
        process.standardError = FileHandle.nullDevice
        try process.run()
        let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        let last = text.split(separator: "\n").last.map(String.init) ?? ""
        let fields = last.split(separator: " ")
        let etag = text.split(separator: "\r\n").first { $0.lowercased().hasPrefix("etag:") }
            .map { $0.dropFirst("etag:".count).trimmingCharacters(in: .whitespaces) }
        return (Int(fields.first ?? "") ?? 0, fields.count > 1 ? String(fields[1]) : "", etag)
    }

    @Test func http2AndHTTP1OverTLSWithConditionalRequestsAndAReloadedCertificate() async throws {
        let fixture = try CatalogServerTests.Fixture(ids: ["com.example.served.coins"])
        defer { fixture.remove() }
        let first = try TestCertificates.make(in: fixture.root)
        let renewed = try TestCertificates.make(in: fixture.root, prefix: "renewed-")
        // The server's files, replaced later as a renewal would.
        let certificate = fixture.root.appendingPathComponent("tls.crt"), key = fixture.root.appendingPathComponent("tls.key")
        try FileManager.default.copyItem(at: first.certificate, to: certificate)
        try FileManager.default.copyItem(at: first.key, to: key)
        let tls = try ReloadingCertificate(certificate: certificate.path, key: key.path, logger: Logger(label: "test"))
        let app = buildApplication(publicDirectory: fixture.publicTree, port: 0, tls: tls, logger: Logger(label: "test"))
        try await app.test(.live) { client in
            let url = "https://localhost:\(try #require(client.port))/v1/apps/\(CatalogServerTests.app)/products.json"
            for (flag, expected) in [("--http2", "2"), ("--http1.1", "1.1")] {
                let full = try await Self.curl(url, ca: first.ca, version: flag)
                #expect(full.status == 200 && full.version == expected, "\(flag): \(full)")
                let etag = try #require(full.etag)
                let revalidated = try await Self.curl(url, ca: first.ca, version: flag, headers: ["If-None-Match: \(etag)"])
                #expect(revalidated.status == 304 && revalidated.version == expected, "\(flag): \(revalidated)")
            }
            // Untrusted: refused by the client.
            #expect(try await Self.curl(url, ca: first.otherCA, version: "--http2").status == 0)

            // A renewal replaces both files; within a second or two the server presents it.
            for (source, target) in [(renewed.certificate, certificate), (renewed.key, key)] {
                let staged = target.appendingPathExtension("new")
                try FileManager.default.copyItem(at: source, to: staged)
                #expect(rename(staged.path, target.path) == 0)
            }
            var status = 0
            for _ in 0..<30 where status != 200 {
                try await Task.sleep(for: .milliseconds(200))
                status = try await Self.curl(url, ca: renewed.ca, version: "--http2").status
            }
            #expect(status == 200, "the renewed certificate was not served")
        }
    }

    /// HTTP/1.1 over TLS goes through the same lean feed path as plain HTTP: its answer is
    /// counted by `catalog_feed_answer_seconds`, which only that path records.
    @Test func http1OverTLSTakesTheLeanFeedPath() async throws {
        let fixture = try CatalogServerTests.Fixture(ids: ["com.example.served.coins"])
        defer { fixture.remove() }
        let files = try TestCertificates.make(in: fixture.root)
        let tls = try ReloadingCertificate(certificate: files.certificate.path, key: files.key.path, logger: Logger(label: "test"))
        let app = buildApplication(publicDirectory: fixture.publicTree, port: 0, tls: tls, logger: Logger(label: "test"))
        try await app.test(.live) { client in
            let port = try #require(client.port)
            let feed = try await TLSProbe.connect(port: port, ca: files.ca, alpn: ["http/1.1"])
            defer { feed.close() }
            // Kept alive: the lean path leaves `Connection: close` to the application.
            feed.send(Array("GET /v1/apps/\(CatalogServerTests.app)/products.json HTTP/1.1\r\nHost: x\r\n\r\n".utf8))
            #expect(await feed.awaitReceived(within: .seconds(10)).hasPrefix("HTTP/1.1 200 OK"))
            let metrics = try await TLSProbe.connect(port: port, ca: files.ca, alpn: ["http/1.1"])
            defer { metrics.close() }
            metrics.send(Array("GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n".utf8))
            #expect(await metrics.awaitClose(within: .seconds(10)))
            let text = String(decoding: metrics.received, as: UTF8.self)
            #expect(text.contains(/catalog_feed_answer_seconds_count [1-9]/), "\(text)")
        }
    }
}
