import CatalogClient
import Content
import Crypto
import Foundation
import Testing

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Where Debian and Ubuntu install nginx (`bash scripts/setup test` installs it); without it the
/// suite fails, never skips: a suite that passes without having looked proves nothing.
private let nginxPath = "/usr/sbin/nginx"

/// Content files fetched from a real nginx standing in for a CDN (`Configuration.contentServer`),
/// while the list comes from the content stand-in: nginx's own ETag, not the digest, goes back in
/// `If-Range` when a paused download resumes, and nginx answers the rest with a 206.
@Suite struct ContentThroughNginxTests {
    static let nginx = nginxPath

    init() throws {
        try #require(FileManager.default.isExecutableFile(atPath: nginxPath), "nginx is missing at \(nginxPath): bash scripts/setup test")
    }

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

    /// nginx serving `root/www` on a free loopback port, each answer at most `limitRate` a second
    /// ("0": no limit), logging each request's range, `If-Range`, status and ETag.
    static func startNginx(root: URL, limitRate: String) async throws -> (Process, URL, URL) {
        let port = try freePort()
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
                sendfile on;
                server {
                    listen 127.0.0.1:\(port);
                    location /v1/content/ { root \(root.path)/www; limit_rate \(limitRate); }
                }
            }
            """
        let file = root.appendingPathComponent("nginx.conf")
        try Data(configuration.utf8).write(to: file)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: nginx)
        process.arguments = ["-e", root.appendingPathComponent("error.log").path, "-p", root.path, "-c", file.path, "-g", "daemon off;"]
        try process.run()
        // Bounded wait for nginx to start.
        for _ in 0..<100 {
            if FileManager.default.fileExists(atPath: root.appendingPathComponent("nginx.pid").path) { break }
            try await Task.sleep(for: .milliseconds(50))
        }
        return (process, try #require(URL(string: "http://127.0.0.1:\(port)")), log)
    }

    @Test func pausedDownloadResumesFromNginxWithItsETag() async throws {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("client-content-nginx-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: root) }
        let standIn = try ContentStandIn()
        let bytes = ContentDownloadManagerTests.bytes(1_000_000, seed: 21)
        standIn.publish("season", version: 1, files: [("season.bin", bytes)])

        // nginx serves the blob by its digest, slowly enough (128 KiB/s: 8 s for the file) to be paused
        // mid-file even on a loaded machine (at 512 KiB/s a loaded run once finished before the pause).
        let www = root.appendingPathComponent("www/v1/content")
        try FileManager.default.createDirectory(at: www, withIntermediateDirectories: true)
        try Data(bytes).write(to: www.appendingPathComponent(ContentDigest.of(bytes).hex))
        let (process, cdn, log) = try await Self.startNginx(root: root, limitRate: "128k")
        defer {
            process.terminate()
            process.waitUntilExit()
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

    /// A measurement, not a check of a figure: a file of `CONTENT_CLIENT_MEMORY_MB` MiB (16 by
    /// default, so the suite always runs it; say 1024 to measure) downloaded from nginx (at `CONTENT_CLIENT_MEMORY_RATE`, an nginx
    /// `limit_rate` such as `200m`; full speed by default), and the test process's peak
    /// resident memory during the download (Linux `VmHWM`, reset first) printed beside its
    /// resident memory before it. The file streams to disk, so the peak should not grow with it.
    @Test func memoryStaysFlatWhateverTheSize() async throws {
        let megabytes = Int(ProcessInfo.processInfo.environment["CONTENT_CLIENT_MEMORY_MB"] ?? "") ?? 16
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("client-content-memory-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: root) }
        let www = root.appendingPathComponent("www/v1/content")
        try FileManager.default.createDirectory(at: www, withIntermediateDirectories: true)
        let staging = www.appendingPathComponent("staging")
        FileManager.default.createFile(atPath: staging.path, contents: nil)
        let handle = try FileHandle(forWritingTo: staging)
        var hasher = SHA256()
        let chunk = Data(ContentDownloadManagerTests.bytes(1 << 20, seed: 17))
        for _ in 0..<megabytes {
            try handle.write(contentsOf: chunk)
            hasher.update(data: chunk)
        }
        try handle.close()
        let digest = try #require(ContentDigest(bytes: Array(hasher.finalize())))
        try FileManager.default.moveItem(at: staging, to: www.appendingPathComponent(digest.hex))
        let (process, cdn, _) = try await Self.startNginx(
            root: root, limitRate: ProcessInfo.processInfo.environment["CONTENT_CLIENT_MEMORY_RATE"] ?? "0")
        defer {
            process.terminate()
            process.waitUntilExit()
        }
        let standIn = try ContentStandIn()
        standIn.list("big", version: 1, path: "big.bin", size: Int64(megabytes) << 20, digest: digest)
        try await standIn.run { server in
            var client = CatalogClient.Configuration(
                server: server, app: ContentStandIn.app, fallbackIdentifiers: [], directory: root.appendingPathComponent("client"))
            client.contentServer = cdn
            client.log = { _ in }
            let manager = ContentDownloadManager(configuration: client, evidence: .transaction(signedTransaction: "h.p.s"))
            let list = try await manager.available()
            let before = Self.memory("VmRSS")
            // Resets the peak where the kernel allows it; elsewhere the peak printed is since start.
            try? "5".write(toFile: "/proc/self/clear_refs", atomically: false, encoding: .utf8)
            let started = Date()
            await manager.download(try #require(list.first))
            let done = try #require(await manager.waitForDownload("big"))
            let seconds = Date().timeIntervalSince(started)
            #expect(done.state == .finished, "\(String(describing: done.error))")
            print(
                "content download of \(megabytes) MiB from nginx: \(String(format: "%.1f", seconds)) s (download and SHA-256), "
                    + "resident before \(before / 1024) MiB, peak during \(Self.memory("VmHWM") / 1024) MiB")
        }
    }

    /// A field of /proc/self/status, in KiB.
    static func memory(_ field: String) -> Int {
        let status = (try? String(contentsOfFile: "/proc/self/status", encoding: .utf8)) ?? ""
        let line = status.split(separator: "\n").first { $0.hasPrefix(field + ":") } ?? ""
        return Int(line.split(separator: " ", omittingEmptySubsequences: true).dropFirst().first ?? "") ?? 0
    }
}
