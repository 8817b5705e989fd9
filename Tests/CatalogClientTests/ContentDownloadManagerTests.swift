import CatalogClient
import Content
import Foundation
import Synchronization
import Testing

/// `ContentDownloadManager` against ``ContentStandIn``, a real HTTP server on loopback that lists
/// and serves content as docs/content.md specifies (docs/client.md, "Deliver purchased content").
@Suite struct ContentDownloadManagerTests {
    /// A client directory of its own; a new manager on it is the app relaunched.
    struct Fixture {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("client-content-\(UUID().uuidString)")

        func configuration(_ server: URL) -> CatalogClient.Configuration {
            var configuration = CatalogClient.Configuration(
                server: server, app: ContentStandIn.app, fallbackIdentifiers: [], directory: root)
            configuration.fetchBackoff = Backoff(initial: 0.01, maximum: 0.05)
            configuration.log = { _ in }
            return configuration
        }

        func manager(
            _ server: URL, location: ContentLocation = .caches, attempts: Int = 3, resumes: Bool = true
        ) -> ContentDownloadManager {
            ContentDownloadManager(
                configuration: configuration(server), location: location,
                evidence: .transaction(signedTransaction: "header.payload.signature"), attemptsPerFile: attempts,
                resumesInterruptedDownloads: resumes)
        }

        func remove() { try? FileManager.default.removeItem(at: root) }
    }

    /// Bytes that are not all alike, so that a splice of the wrong ranges shows in the digest.
    static func bytes(_ count: Int, seed: UInt8 = 1) -> [UInt8] {
        (0..<count).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ Int(seed) &+ $0 >> 8) }
    }

    static func sha256(_ bytes: [UInt8]) -> String { ContentDigest.of(bytes).hex }

    /// Waits (bounded) until `condition` holds of the item's status.
    static func waitUntil(
        _ manager: ContentDownloadManager, _ item: String, _ condition: @Sendable (ContentDownloadStatus) -> Bool
    ) async throws {
        for _ in 0..<400 {
            if let status = await manager.status(of: item), condition(status) { return }
            try await Task.sleep(for: .milliseconds(25))
        }
        Issue.record("\(item) never reached the awaited state: \(String(describing: await manager.status(of: item)))")
    }

    /// The partial files under the manager's folder, whatever item folder holds them.
    static func partials(_ manager: ContentDownloadManager) -> [String] {
        let root = manager.directory.appendingPathComponent("partial")
        let paths = FileManager.default.enumerator(atPath: root.path)?.compactMap { $0 as? String } ?? []
        return paths.filter { path in
            var isDirectory: ObjCBool = false
            return FileManager.default.fileExists(atPath: root.appendingPathComponent(path).path, isDirectory: &isDirectory)
                && !isDirectory.boolValue
        }
    }

    /// A whole download: two files (one in a subfolder), each verified and put at its path in the
    /// item's folder in Caches, with progress reported on the way up to the whole size.
    @Test func wholeDownloadWithProgress() async throws {
        let fixture = Fixture()
        defer { fixture.remove() }
        let standIn = try ContentStandIn()
        let level = Self.bytes(700_000)
        let readme = Array("Level pack\n".utf8)
        standIn.publish("levels", version: 1, files: [("maps/1.bin", level), ("readme.txt", readme)])
        try await standIn.run { server in
            let manager = fixture.manager(server)
            #expect(manager.directory.path.hasPrefix(fixture.root.appendingPathComponent("cache").path))
            let updates = await manager.updates()
            let seen = Task {
                var statuses: [ContentDownloadStatus] = []
                for await status in updates {
                    statuses.append(status)
                    if status.isDone { break }
                }
                return statuses
            }
            let list = try await manager.available()
            #expect(list.map(\.item) == ["levels"])
            #expect(list.first?.size == Int64(level.count + readme.count))
            let body = try #require(standIn.state.withLock { $0.listBodies.first })
            #expect(String(decoding: body, as: UTF8.self).contains(#""signedTransaction":"header.payload.signature""#))

            await manager.download(try #require(list.first))
            let done = try #require(await manager.waitForDownload("levels"))
            #expect(done.state == .finished, "\(String(describing: done.error))")
            #expect(done.bytesWritten == done.bytesExpected)
            #expect(done.fractionCompleted == 1)
            let folder = try #require(done.location)
            #expect(try Data(contentsOf: folder.appendingPathComponent("maps/1.bin")) == Data(level))
            #expect(try Data(contentsOf: folder.appendingPathComponent("readme.txt")) == Data(readme))
            #expect(await manager.location(of: "levels") == folder)
            #expect(await manager.downloaded().map(\.item) == ["levels"])
            #expect(Self.partials(manager).isEmpty)

            let statuses = await seen.value
            #expect(statuses.first?.state == .waiting)
            #expect(statuses.contains { $0.state == .active && $0.bytesWritten > 0 && $0.bytesWritten < $0.bytesExpected })
            let written = statuses.map(\.bytesWritten)
            #expect(written == written.sorted(), "progress never goes back")
            #expect(statuses.contains { $0.state == .active && $0.estimatedTimeRemaining != nil })
            #expect(statuses.last?.state == .finished)
            #expect(standIn.fetches.allSatisfy { $0.range == nil && $0.status == 200 })
        }
    }

    /// Pause keeps the bytes received; resume asks for the rest with `Range` and `If-Range` (the
    /// strong ETag) and gets a 206, and the file assembled from both parts matches its digest.
    @Test func pauseThenResumeByRange() async throws {
        let fixture = Fixture()
        defer { fixture.remove() }
        let standIn = try ContentStandIn()
        let bytes = Self.bytes(1_000_000)
        standIn.publish("season", version: 1, files: [("season.bin", bytes)])
        standIn.state.withLock { $0.holdAfter = 200_000 }
        try await standIn.run { server in
            let manager = fixture.manager(server)
            defer { standIn.release() }
            try await manager.download(item: "season")
            try await Self.waitUntil(manager, "season") { $0.state == .active && $0.bytesWritten >= 100_000 }
            await manager.pause("season")
            #expect(await manager.status(of: "season")?.state == .paused)
            #expect(await manager.waitForDownload("season")?.state == .paused)
            standIn.release()
            await manager.resume("season")
            let done = try #require(await manager.waitForDownload("season"))
            #expect(done.state == .finished, "\(String(describing: done.error))")
            #expect(try Data(contentsOf: try #require(done.location).appendingPathComponent("season.bin")) == Data(bytes))
            let fetches = standIn.fetches
            #expect(fetches.count == 2)
            let resumed = try #require(fetches.last)
            #expect(resumed.status == 206)
            #expect(resumed.ifRange == "\"\(Self.sha256(bytes))\"")
            let first = try #require(resumed.range.flatMap { Int($0.dropFirst("bytes=".count).dropLast()) })
            #expect(first > 0 && first < bytes.count)
        }
    }

    /// A process killed mid-download (simulated: its record as it was while active, restored after
    /// it stopped) is resumed by the next launch by itself, by range.
    @Test func killedDownloadResumesAtLaunch() async throws {
        let fixture = Fixture()
        defer { fixture.remove() }
        let standIn = try ContentStandIn()
        let bytes = Self.bytes(800_000, seed: 11)
        standIn.publish("album", version: 1, files: [("album.bin", bytes)])
        standIn.state.withLock { $0.holdAfter = 200_000 }
        try await standIn.run { server in
            defer { standIn.release() }
            let killed = fixture.manager(server)
            try await killed.download(item: "album")
            try await Self.waitUntil(killed, "album") { $0.state == .active && $0.bytesWritten > 0 }
            let record = killed.directory.appendingPathComponent("jobs/album.json")
            let whileActive = try Data(contentsOf: record)
            await killed.pause("album")
            _ = await killed.waitForDownload("album")
            try whileActive.write(to: record)
            standIn.release()

            let relaunched = fixture.manager(server)
            let done = try #require(await relaunched.waitForDownload("album"))
            #expect(done.state == .finished, "\(String(describing: done.error))")
            #expect(try Data(contentsOf: try #require(done.location).appendingPathComponent("album.bin")) == Data(bytes))
            #expect(standIn.fetches.last?.status == 206)
        }
    }

    /// The attack: a server (or a hostile cache) answering more bytes than the list gives, to fill
    /// the disk. The answer is refused at its `Content-Length`, nothing is kept, and the download fails.
    @Test func oversizedAnswerIsRefused() async throws {
        let fixture = Fixture()
        defer { fixture.remove() }
        let standIn = try ContentStandIn()
        let listed = Self.bytes(100_000, seed: 13)
        standIn.publish("pack", version: 1, files: [("pack.bin", listed)])
        standIn.state.withLock { $0.blobs[ContentDigest.of(listed)] = Self.bytes(5_000_000, seed: 13) }
        try await standIn.run { server in
            let manager = fixture.manager(server)
            try await manager.download(item: "pack")
            let done = try #require(await manager.waitForDownload("pack"))
            #expect(done.state == .failed)
            #expect(done.error?.code == .malformedResponse)
            #expect(Self.partials(manager).isEmpty)
            #expect(standIn.fetches.count == 1, "not asked again")
        }
    }

    /// The attack on a naive client: the connection is cut mid-file. The manager keeps what came,
    /// asks for the rest by range, and the file is whole and verified.
    @Test func cutConnectionResumesByRange() async throws {
        let fixture = Fixture()
        defer { fixture.remove() }
        let standIn = try ContentStandIn()
        let bytes = Self.bytes(600_000, seed: 7)
        standIn.publish("issue", version: 1, files: [("issue.pdf", bytes)])
        standIn.state.withLock { $0.cutAfter = 160 * 1024 }
        try await standIn.run { server in
            let manager = fixture.manager(server)
            try await manager.download(item: "issue")
            let done = try #require(await manager.waitForDownload("issue"))
            #expect(done.state == .finished, "\(String(describing: done.error))")
            #expect(try Data(contentsOf: try #require(done.location).appendingPathComponent("issue.pdf")) == Data(bytes))
            let fetches = standIn.fetches
            #expect(fetches.count == 2)
            #expect(fetches.first?.range == nil)
            #expect(fetches.last?.status == 206)
            let first = try #require(fetches.last?.range.flatMap { Int($0.dropFirst("bytes=".count).dropLast()) })
            #expect(first > 0 && first <= 160 * 1024, "only the bytes not received are asked again")
        }
    }

    /// A new manager on the same folder (the app relaunched) knows the unfinished download, with
    /// the bytes it had, and resumes it by range with the URL it kept: no new list.
    @Test func relaunchResumes() async throws {
        let fixture = Fixture()
        defer { fixture.remove() }
        let standIn = try ContentStandIn()
        let bytes = Self.bytes(500_000, seed: 3)
        standIn.publish("pack", version: 1, files: [("pack.bin", bytes)])
        standIn.state.withLock { $0.cutAfter = 128 * 1024 }
        try await standIn.run { server in
            let first = fixture.manager(server, attempts: 1)
            try await first.download(item: "pack")
            let failed = try #require(await first.waitForDownload("pack"))
            #expect(failed.state == .failed)
            #expect(failed.error?.code == .transport)
            #expect(failed.bytesWritten > 0)

            let relaunched = fixture.manager(server)
            let restored = try #require(await relaunched.status(of: "pack"))
            #expect(restored.state == .paused)
            #expect(restored.bytesWritten == failed.bytesWritten)
            await relaunched.resume("pack")
            let done = try #require(await relaunched.waitForDownload("pack"))
            #expect(done.state == .finished, "\(String(describing: done.error))")
            #expect(try Data(contentsOf: try #require(done.location).appendingPathComponent("pack.bin")) == Data(bytes))
            #expect(standIn.lists == 1, "the kept URL was still good")
            #expect(standIn.fetches.last?.range == "bytes=\(failed.bytesWritten)-")
            #expect(standIn.fetches.last?.status == 206)
        }
    }

    /// The attack: the server (or a cache in front) serves other bytes than the list's digest. They
    /// are deleted and never handed over, and the download fails saying so.
    @Test func digestMismatchIsRefused() async throws {
        let fixture = Fixture()
        defer { fixture.remove() }
        let standIn = try ContentStandIn()
        let good = Self.bytes(300_000, seed: 5)
        standIn.publish("book", version: 1, files: [("book.epub", good)])
        var bad = good
        bad[150_000] ^= 0xFF
        standIn.state.withLock { $0.blobs[ContentDigest.of(good)] = bad }
        try await standIn.run { server in
            let manager = fixture.manager(server)
            try await manager.download(item: "book")
            let done = try #require(await manager.waitForDownload("book"))
            #expect(done.state == .failed)
            #expect(done.error?.code == .digestMismatch)
            #expect(done.error?.message.contains("book.epub") == true)
            #expect(done.location == nil)
            #expect(await manager.downloaded().isEmpty)
            #expect(await manager.location(of: "book") == nil)
            #expect(Self.partials(manager).isEmpty, "the bad bytes are deleted")
        }
    }

    /// Cancel stops the download and removes its partial file and its record.
    @Test func cancelRemovesPartials() async throws {
        let fixture = Fixture()
        defer { fixture.remove() }
        let standIn = try ContentStandIn()
        standIn.publish("movie", version: 1, files: [("movie.bin", Self.bytes(900_000))])
        standIn.state.withLock { $0.holdAfter = 200_000 }
        try await standIn.run { server in
            let manager = fixture.manager(server)
            defer { standIn.release() }
            try await manager.download(item: "movie")
            try await Self.waitUntil(manager, "movie") { $0.state == .active && $0.bytesWritten > 0 }
            #expect(!Self.partials(manager).isEmpty)
            await manager.cancel("movie")
            let status = try #require(await manager.waitForDownload("movie"))
            #expect(status.state == .cancelled)
            #expect(Self.partials(manager).isEmpty)
            let jobs = (try? FileManager.default.contentsOfDirectory(atPath: manager.directory.appendingPathComponent("jobs").path)) ?? []
            #expect(jobs.isEmpty)
            #expect(await fixture.manager(server).status(of: "movie") == nil, "a relaunch does not bring it back")
        }
    }

    /// A newer version on the server shows in the inventory; downloading it fetches only the
    /// changed file and replaces the old version.
    @Test func newerVersionDetected() async throws {
        let fixture = Fixture()
        defer { fixture.remove() }
        let standIn = try ContentStandIn()
        let art = Self.bytes(200_000, seed: 9)
        standIn.publish("levels", version: 1, files: [("art.bin", art), ("levels.json", Array("[1]".utf8))])
        try await standIn.run { server in
            let manager = fixture.manager(server)
            try await manager.download(item: "levels")
            #expect(await manager.waitForDownload("levels")?.state == .finished)
            let same = try await manager.inventory()
            #expect(same.map(\.newerVersionAvailable) == [false])

            standIn.publish("levels", version: 2, files: [("art.bin", art), ("levels.json", Array("[1,2]".utf8))])
            let inventory = try await manager.inventory()
            let entry = try #require(inventory.first)
            #expect(entry.item == "levels" && entry.downloadedVersion == 1 && entry.availableVersion == 2)
            #expect(entry.newerVersionAvailable)

            try await manager.download(item: "levels")
            let done = try #require(await manager.waitForDownload("levels"))
            #expect(done.state == .finished && done.version == 2)
            let folder = try #require(done.location)
            #expect(try Data(contentsOf: folder.appendingPathComponent("levels.json")) == Data("[1,2]".utf8))
            #expect(try Data(contentsOf: folder.appendingPathComponent("art.bin")) == Data(art))
            #expect(standIn.fetches.filter { $0.digest == Self.sha256(art) }.count == 1, "the unchanged file is not downloaded again")
            #expect(try await manager.inventory().map(\.newerVersionAvailable) == [false])
            let versions = try FileManager.default.contentsOfDirectory(atPath: folder.deletingLastPathComponent().path)
            #expect(versions == ["2"], "the old version is removed")
        }
    }

    /// A signed URL the server refuses (an expired one, or one of a key rotated out) is replaced by
    /// asking for the list again.
    @Test func refusedURLIsRefreshed() async throws {
        let fixture = Fixture()
        defer { fixture.remove() }
        let standIn = try ContentStandIn()
        standIn.publish("issue", version: 1, files: [("issue.pdf", Self.bytes(50_000))])
        standIn.state.withLock { $0.signNextListWithUnknownKey = true }
        try await standIn.run { server in
            let manager = fixture.manager(server)
            try await manager.download(item: "issue")
            let done = try #require(await manager.waitForDownload("issue"))
            #expect(done.state == .finished, "\(String(describing: done.error))")
            #expect(standIn.lists == 2)
            #expect(standIn.fetches.map(\.status) == [403, 200])
        }
    }

    /// A URL the list gave that has expired since is not even tried: the list is asked again first.
    @Test func expiredURLIsRefreshedBeforeUse() async throws {
        let fixture = Fixture()
        defer { fixture.remove() }
        let standIn = try ContentStandIn()
        standIn.publish("issue", version: 1, files: [("issue.pdf", Self.bytes(40_000))])
        standIn.state.withLock { $0.expireNextList = true }
        try await standIn.run { server in
            let manager = fixture.manager(server)
            let list = try await manager.available()
            #expect(try #require(list.first?.files.first).expires < Date())
            await manager.download(try #require(list.first))
            let done = try #require(await manager.waitForDownload("issue"))
            #expect(done.state == .finished, "\(String(describing: done.error))")
            #expect(standIn.lists == 2)
            #expect(standIn.fetches.map(\.status) == [200], "the expired URL was never sent")
        }
    }

    /// At most `maximumConcurrentDownloads` items download at once; the next waits its turn.
    @Test func concurrencyIsBounded() async throws {
        let fixture = Fixture()
        defer { fixture.remove() }
        let standIn = try ContentStandIn()
        standIn.publish("first", version: 1, files: [("a.bin", Self.bytes(500_000, seed: 1))])
        standIn.publish("second", version: 1, files: [("b.bin", Self.bytes(50_000, seed: 2))])
        standIn.state.withLock { $0.holdAfter = 100_000 }
        try await standIn.run { server in
            defer { standIn.release() }
            let manager = ContentDownloadManager(
                configuration: fixture.configuration(server), evidence: .transaction(signedTransaction: "h.p.s"),
                maximumConcurrentDownloads: 1)
            let list = try await manager.available().sorted { $0.item < $1.item }
            #expect(list.map(\.item) == ["first", "second"])
            await manager.download(list[0])
            await manager.download(list[1])
            try await Self.waitUntil(manager, "first") { $0.state == .active && $0.bytesWritten > 0 }
            #expect(await manager.status(of: "second")?.state == .waiting)
            standIn.release()
            #expect(await manager.waitForDownload("first")?.state == .finished)
            #expect(await manager.waitForDownload("second")?.state == .finished)
            #expect(standIn.fetches.count == 2)
        }
    }

    /// The attack: a list naming a path that climbs out of the item's folder. It is refused before
    /// anything is written, even though the real server never sends one.
    @Test func escapingPathIsRefused() async throws {
        let fixture = Fixture()
        defer { fixture.remove() }
        let standIn = try ContentStandIn()
        let digest = String(repeating: "a", count: 64)
        for path in ["../../escape", "/etc/passwd", "a/./b", "a//b", #"a\b"#] {
            standIn.state.withLock {
                $0.rawList =
                    #"{"items":[{"item":"x","version":1,"files":[{"path":"\#(path.replacingOccurrences(of: "\\", with: "\\\\"))","size":1,"sha256":"\#(digest)","url":"/v1/content/\#(digest)?exp=1&kid=k&sig=s","expires":1}]}]}"#
            }
            try await standIn.run { server in
                let manager = fixture.manager(server)
                do throws(CatalogClientError) {
                    _ = try await manager.available()
                    Issue.record("\(path) was accepted")
                } catch {
                    #expect(error.code == .malformedResponse, "\(path): \(error)")
                }
            }
        }
    }

    /// Content goes to Application Support when asked. The default evidence is the last purchase
    /// the server accepted on this install; with none, no list is asked for, and the error says why.
    @Test func locationAndMissingEvidence() async throws {
        let fixture = Fixture()
        defer { fixture.remove() }
        let standIn = try ContentStandIn()
        try await standIn.run { server in
            let kept = ContentDownloadManager(configuration: fixture.configuration(server), location: .applicationSupport())
            #expect(kept.directory.path.hasPrefix(fixture.root.appendingPathComponent("data").path))
            do throws(CatalogClientError) {
                _ = try await kept.available()
                Issue.record("a list without evidence")
            } catch {
                #expect(error.code == .rejected)
                #expect(error.message.contains("sendPurchase"))
            }
            #expect(standIn.lists == 0)

            // Once the server accepted a purchase (the purchase queue keeps its body), that is shown.
            let accepted = Data(#"{"signedTransaction":"accepted.purchase.jws"}"#.utf8)
            let purchases = fixture.root.appendingPathComponent("data/purchases")
            try FileManager.default.createDirectory(at: purchases, withIntermediateDirectories: true)
            try accepted.write(to: purchases.appendingPathComponent("evidence.json"))
            _ = try await kept.available()
            #expect(standIn.state.withLock { $0.listBodies } == [accepted])
        }
    }
}
