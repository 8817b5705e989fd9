import CatalogClient
import Content
import Foundation
import Testing

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Where Debian and Ubuntu install nginx; the suite is skipped without it.
private let nginxPath = "/usr/sbin/nginx"

/// Content files fetched from a real nginx standing in for a CDN (`Configuration.contentServer`),
/// while the list comes from the content stand-in: nginx's own ETag, not the digest, goes back in
/// `If-Range` when a paused download resumes, and nginx answers the rest with a 206.
@Suite(.enabled(if: FileManager.default.isExecutableFile(atPath: nginxPath)))
struct ContentThroughNginxTests {
    static let nginx = nginxPath

    /// A free loopback port: bound, read, released.
    static func freePort() throws -> Int {
        let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard descriptor >= 0 else { throw CocoaError(.featureUnsupported) }
        defer { close(descriptor) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { pointer in
                bind(descriptor, pointer, length) == 0 && getsockname(descriptor, pointer, &length) == 0
            }
        }
        guard bound else { throw CocoaError(.featureUnsupported) }
        return Int(UInt16(bigEndian: address.sin_port))
    }

    @Test func pausedDownloadResumesFromNginxWithItsETag() async throws {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("client-content-nginx-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: root) }
        let standIn = try ContentStandIn()
        let bytes = ContentDownloadManagerTests.bytes(1_000_000, seed: 21)
        standIn.publish("season", version: 1, files: [("season.bin", bytes)])

        // nginx serves the blob by its digest, slowly enough (512 KiB/s) to be paused mid-file.
        let www = root.appendingPathComponent("www/v1/content")
        try FileManager.default.createDirectory(at: www, withIntermediateDirectories: true)
        try Data(bytes).write(to: www.appendingPathComponent(ContentDigest.of(bytes).hex))
        let port = try Self.freePort()
        let log = root.appendingPathComponent("access.log")
        let configuration = """
            worker_processes 1;
            pid \(root.path)/nginx.pid;
            error_log \(root.path)/error.log;
            events { worker_connections 64; }
            http {
                log_format ranges '$uri|$http_range|$http_if_range|$status|$sent_http_etag';
                access_log \(log.path) ranges;
                client_body_temp_path \(root.path)/body;
                proxy_temp_path \(root.path)/proxy;
                fastcgi_temp_path \(root.path)/fastcgi;
                uwsgi_temp_path \(root.path)/uwsgi;
                scgi_temp_path \(root.path)/scgi;
                server {
                    listen 127.0.0.1:\(port);
                    location /v1/content/ { root \(root.path)/www; limit_rate 512k; }
                }
            }
            """
        let file = root.appendingPathComponent("nginx.conf")
        try Data(configuration.utf8).write(to: file)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: Self.nginx)
        process.arguments = ["-e", root.appendingPathComponent("error.log").path, "-p", root.path, "-c", file.path, "-g", "daemon off;"]
        try process.run()
        defer {
            process.terminate()
            process.waitUntilExit()
        }
        let cdn = try #require(URL(string: "http://127.0.0.1:\(port)"))
        // Bounded wait for nginx to listen.
        for _ in 0..<100 {
            if (try? Data(contentsOf: root.appendingPathComponent("nginx.pid"))) != nil { break }
            try await Task.sleep(for: .milliseconds(50))
        }

        try await standIn.run { server in
            var client = CatalogClient.Configuration(
                server: server, app: ContentStandIn.app, fallbackIdentifiers: [], directory: root.appendingPathComponent("client"))
            client.contentServer = cdn
            client.log = { _ in }
            let manager = ContentDownloadManager(configuration: client, evidence: .transaction(signedTransaction: "h.p.s"))
            try await manager.download(item: "season")
            try await ContentDownloadManagerTests.waitUntil(manager, "season") { $0.state == .active && $0.bytesWritten >= 64 * 1024 }
            await manager.pause("season")
            _ = await manager.waitForDownload("season")
            await manager.resume("season")
            let done = try #require(await manager.waitForDownload("season"))
            #expect(done.state == .finished, "\(String(describing: done.error))")
            #expect(try Data(contentsOf: try #require(done.location).appendingPathComponent("season.bin")) == Data(bytes))
        }
        let lines = try String(contentsOf: log, encoding: .utf8).split(separator: "\n").map {
            $0.split(separator: "|", omittingEmptySubsequences: false)
        }
        #expect(lines.count == 2)
        let first = try #require(lines.first)
        let resumed = try #require(lines.last)
        #expect(first[1] == "-" && first[3] == "200")
        #expect(resumed[1].hasPrefix("bytes=") && resumed[1] != "bytes=0-")
        #expect(resumed[2] == first[4], "If-Range is the ETag nginx sent, not the digest")
        #expect(resumed[3] == "206")
    }
}
