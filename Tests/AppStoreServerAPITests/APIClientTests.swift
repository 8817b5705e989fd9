import AppStoreAPIStandIn
import AppStoreServerAPI
import Crypto
import Foundation
import OutboundAPI
import Synchronization
import Testing

/// The client against the stand-in: Apple's token checks on every call, key rotation while
/// running, retries on 429 and 5xx that honour `Retry-After`, Apple's errors by name, and answers
/// that are cut or late.
@Suite struct APIClientTests {
    /// A key file on disk, as App Store Connect's `.p8`.
    struct KeyFile {
        let folder: URL
        let path: String
        init() throws {
            folder = FileManager.default.temporaryDirectory.appendingPathComponent("api-key-\(UUID().uuidString)")
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            path = folder.appendingPathComponent("AuthKey.p8").path
        }
        func write(_ key: P256.Signing.PrivateKey) throws {
            // Replaced as an operator would: a new file moved over the old one.
            let temporary = folder.appendingPathComponent("AuthKey.p8.new")
            try key.pemRepresentation.write(to: temporary, atomically: false, encoding: .utf8)
            guard rename(temporary.path, path) == 0 else { throw CocoaError(.fileWriteUnknown) }
        }
        func remove() { try? FileManager.default.removeItem(at: folder) }
    }

    /// The waits the client asked for, instead of waiting.
    final class Waits: Sendable {
        let list = Mutex<[Duration]>([])
        var all: [Duration] { list.withLock { $0 } }
        func sleep(_ duration: Duration) async throws { list.withLock { $0.append(duration) } }
    }

    /// Every attempt the client reported.
    final class Records: Sendable {
        let list = Mutex<[APICallRecord]>([])
        var outcomes: [String] { list.withLock { $0.map(\.outcome) } }
        func append(_ record: APICallRecord) { list.withLock { $0.append(record) } }
    }

    struct Fixture {
        let standIn: AppStoreAPIStandIn
        let key: P256.Signing.PrivateKey
        let file: KeyFile
        let client: AppStoreServerAPIClient
        let tokens: APITokenSource
        let waits: Waits
        let transport: HTTPClientTransport
        let records: Records

        func stop() async {
            try? await transport.shutdown()
            await standIn.stop()
            file.remove()
        }
    }

    static let keyId = "ABCDEF1234"

    static func fixture(policy: APIRetryPolicy = APIRetryPolicy()) async throws -> Fixture {
        let standIn = try await AppStoreAPIStandIn.start()
        let key = P256.Signing.PrivateKey()
        standIn.accept(kid: keyId, key: key.publicKey)
        let file = try KeyFile()
        try file.write(key)
        let tokens = APITokenSource(
            AppStoreAPICredentials(keyId: keyId, issuerId: standIn.issuerId, bundleId: standIn.bundleId, keyFile: file.path))
        let waits = Waits()
        let transport = HTTPClientTransport()
        let records = Records()
        let client = AppStoreServerAPIClient(
            environment: .production, baseURL: standIn.baseURL, tokens: tokens, transport: transport, policy: policy,
            observe: { records.append($0) }, sleep: { try await waits.sleep($0) })
        return Fixture(
            standIn: standIn, key: key, file: file, client: client, tokens: tokens, waits: waits, transport: transport,
            records: records)
    }

    /// Runs `body` with a fixture, stopped whatever happens (a client not shut down traps).
    static func withFixture(policy: APIRetryPolicy = APIRetryPolicy(), _ body: (Fixture) async throws -> Void) async throws {
        let fixture = try await fixture(policy: policy)
        do {
            try await body(fixture)
        } catch {
            await fixture.stop()
            throw error
        }
        await fixture.stop()
    }

    static var window: NotificationHistoryRequest {
        let now = Int64(Date().timeIntervalSince1970 * 1000)
        return NotificationHistoryRequest(startDate: now - 86_400_000, endDate: now)
    }

    @Test func everyCallCarriesATokenTheStandInAccepts() async throws {
        try await Self.withFixture() { fixture in
            fixture.standIn.addNotification("a.b.c", firstSent: Date().addingTimeInterval(-60))
            let page = try await fixture.client.notificationHistory(Self.window, paginationToken: nil)
            #expect(page.notificationHistory?.map(\.signedPayload) == ["a.b.c"])
            #expect(page.hasMore == false)
            #expect(fixture.standIn.calls.map(\.status) == [200])
        }
    }

    @Test func aTokenIsReusedUntilNearItsExpiry() async throws {
        let key = P256.Signing.PrivateKey()
        let file = try KeyFile()
        defer { file.remove() }
        try file.write(key)
        let tokens = APITokenSource(AppStoreAPICredentials(keyId: "K", issuerId: "I", bundleId: "B", keyFile: file.path))
        let start = Date(timeIntervalSince1970: 1_750_000_000)
        let first = try await tokens.token(now: start)
        #expect(try await tokens.token(now: start.addingTimeInterval(APITokenSource.lifetime - APITokenSource.renewal - 1)) == first)
        #expect(try await tokens.token(now: start.addingTimeInterval(APITokenSource.lifetime - APITokenSource.renewal + 1)) != first)
    }

    @Test func theStandInRefusesTokensAppleWouldRefuse() async throws {
        try await Self.withFixture(policy: APIRetryPolicy(maximumAttempts: 1)) { fixture in
            let standIn = fixture.standIn
            let now = Date()
            func call(_ credentials: AppStoreAPICredentials, key: P256.Signing.PrivateKey, issuedAt: Date = now) async throws {
                try fixture.file.write(key)
                let client = AppStoreServerAPIClient(
                    environment: .production, baseURL: standIn.baseURL, tokens: APITokenSource(credentials), transport: fixture.transport,
                    policy: APIRetryPolicy(maximumAttempts: 1), now: { issuedAt })
                _ = try await client.notificationHistory(Self.window, paginationToken: nil)
            }
            let good = AppStoreAPICredentials(
                keyId: Self.keyId, issuerId: standIn.issuerId, bundleId: standIn.bundleId, keyFile: fixture.file.path)
            try await call(good, key: fixture.key)
            var wrongIssuer = good
            wrongIssuer.issuerId = "another-team"
            var wrongBundle = good
            wrongBundle.bundleId = "com.example.other"
            var unknownKey = good
            unknownKey.keyId = "ZZZZZZZZZZ"
            for (credentials, key, issued) in [
                (wrongIssuer, fixture.key, now), (wrongBundle, fixture.key, now), (unknownKey, fixture.key, now),
                // A key the stand-in never saw under this id, and a token issued an hour ago (expired).
                (good, P256.Signing.PrivateKey(), now), (good, fixture.key, now.addingTimeInterval(-3600)),
                // Issued in the future.
                (good, fixture.key, now.addingTimeInterval(600)),
            ] {
                await #expect(throws: AppStoreAPIError.self) { try await call(credentials, key: key, issuedAt: issued) }
            }
            #expect(fixture.standIn.calls.map(\.status) == [200, 401, 401, 401, 401, 401, 401])
        }
    }

    @Test func aRotatedKeyFileIsUsedFromTheNextCall() async throws {
        try await Self.withFixture() { fixture in
            _ = try await fixture.client.notificationHistory(Self.window, paginationToken: nil)
            // App Store Connect: a new key; the operator replaces the file and revokes the old key.
            let newKey = P256.Signing.PrivateKey()
            fixture.standIn.accept(kid: Self.keyId, key: newKey.publicKey)
            try fixture.file.write(newKey)
            _ = try await fixture.client.notificationHistory(Self.window, paginationToken: nil)
            #expect(fixture.standIn.calls.map(\.status) == [200, 200])
            // And a key id changed with the catalog's settings.
            fixture.standIn.accept(kid: "NEWKEY0001", key: newKey.publicKey)
            fixture.standIn.revoke(kid: Self.keyId)
            await fixture.tokens.update(
                AppStoreAPICredentials(
                    keyId: "NEWKEY0001", issuerId: fixture.standIn.issuerId, bundleId: fixture.standIn.bundleId, keyFile: fixture.file.path)
            )
            _ = try await fixture.client.notificationHistory(Self.window, paginationToken: nil)
            #expect(fixture.standIn.calls.map(\.kid) == [Self.keyId, Self.keyId, "NEWKEY0001"])
        }
    }

    @Test func throttlingIsRetriedAfterRetryAfter() async throws {
        try await Self.withFixture() { fixture in
            fixture.standIn.inject(.status(429, code: 4_290_000, retryAfter: "7"), .status(503), .status(500, code: 5_000_001))
            let page = try await fixture.client.notificationHistory(Self.window, paginationToken: nil)
            #expect(page.hasMore == false)
            #expect(fixture.standIn.calls.map(\.status) == [429, 503, 500, 200])
            let waits = fixture.waits.all
            #expect(waits.count == 3)
            #expect(waits.first == .seconds(7))
            // Without Retry-After, the doubling: 2 s then 4 s, each scaled into [0.5, 1).
            #expect(waits[1] >= .seconds(1) && waits[1] < .seconds(2))
            #expect(waits[2] >= .seconds(2) && waits[2] < .seconds(4))
            #expect(fixture.records.outcomes == ["429", "503", "500", "200"])
        }
    }

    @Test func retriesEndAndApplesErrorIsNamed() async throws {
        try await Self.withFixture(policy: APIRetryPolicy(maximumAttempts: 3)) { fixture in
            fixture.standIn.inject(.status(429, code: 4_290_000), .status(429, code: 4_290_000), .status(429, code: 4_290_000))
            do {
                _ = try await fixture.client.notificationHistory(Self.window, paginationToken: nil)
                Issue.record("a throttled call succeeded")
            } catch let error as AppStoreAPIError {
                #expect(error.kind == .throttled)
                #expect(error.name == "RATE_LIMIT_EXCEEDED")
            }
            #expect(fixture.standIn.calls.count == 3)
            // A refusal is not retried, and says what Apple said.
            do {
                _ = try await fixture.client.transactionHistory("9999", revision: nil)
                Issue.record("an unknown transaction was found")
            } catch let error as AppStoreAPIError {
                #expect(error.kind == .refused)
                #expect(error.status == 404)
                #expect(error.name == "TRANSACTION_ID_NOT_FOUND")
                #expect(error.description.contains("4040010 TRANSACTION_ID_NOT_FOUND"))
            }
            #expect(fixture.standIn.calls.count == 4)
        }
    }

    @Test func aRetryAfterBeyondThePolicyFailsTheCallAtOnce() async throws {
        try await Self.withFixture() { fixture in
            fixture.standIn.inject(.status(429, code: 4_290_000, retryAfter: "3600"))
            await #expect(throws: AppStoreAPIError.self) { try await fixture.client.notificationHistory(Self.window, paginationToken: nil) }
            #expect(fixture.waits.all.isEmpty)
        }
    }

    @Test func cutAndLateAnswersAreRetried() async throws {
        // A timeout an answer on loopback never takes, even with the whole suite running on two
        // cores (at 500 ms, the answer after the late one was once taken for late as well).
        try await Self.withFixture(policy: APIRetryPolicy(attemptTimeout: .seconds(2))) { fixture in
            fixture.standIn.inject(.cut, .slow(.seconds(6)))
            let page = try await fixture.client.notificationHistory(Self.window, paginationToken: nil)
            #expect(page.hasMore == false)
            #expect(fixture.records.outcomes == ["unreachable", "unreachable", "200"])
        }
    }

    @Test func historyPagesFollowPaginationTokensBoundToTheirWindow() async throws {
        try await Self.withFixture() { fixture in
            let now = Date()
            for index in 0..<45 { fixture.standIn.addNotification("n\(index)", firstSent: now.addingTimeInterval(Double(index - 100))) }
            // One window, the same body on every page, as Apple asks.
            let window = Self.window
            var seen: [String] = []
            var token: String?
            repeat {
                let page = try await fixture.client.notificationHistory(window, paginationToken: token)
                seen += page.notificationHistory?.compactMap(\.signedPayload) ?? []
                token = page.hasMore == true ? page.paginationToken : nil
            } while token != nil
            #expect(seen == (0..<45).map { "n\($0)" })
            // A token used with another window is Apple's INVALID_PAGINATION_TOKEN.
            let first = try await fixture.client.notificationHistory(window, paginationToken: nil)
            var other = window
            other.startDate -= 1000
            do {
                _ = try await fixture.client.notificationHistory(other, paginationToken: first.paginationToken)
                Issue.record("a token was accepted for another window")
            } catch let error as AppStoreAPIError {
                #expect(error.name == "INVALID_PAGINATION_TOKEN")
            }
        }
    }
}
