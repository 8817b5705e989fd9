import AppStore
import AppStoreTestSupport
import Foundation
import Ledger
import Testing

@testable import Storage

/// Notification bodies kept in SQLite compressed against an earlier one (docs/storage.md,
/// "Notification bodies"): every body reads back as posted, by both readers, whatever happened to
/// the transactions that stored its base.
@Suite struct NotificationBodyTests {
    typealias PKI = AppStoreTestPKI
    static let app = "com.example.app"

    private let folder = FileManager.default.temporaryDirectory.appendingPathComponent("notification-bodies-\(UUID().uuidString)")
    private var path: String { folder.appendingPathComponent("catalog.sqlite").path }

    /// Bodies as Apple posts them: a signed notification with its signed transaction and renewal
    /// info, each with the chain in its header (about 7 KB with this PKI's chain).
    static func bodies(_ count: Int, type: String = "DID_RENEW") throws -> [(id: String, body: String)] {
        let pki = try PKI.ecdsa()
        return try (0..<count).map { index in
            let id = UUID().uuidString.lowercased()
            let transaction = try pki.jws(payload: PKI.transaction(["transactionId": "\(3_000_000_000_000_000 + index)"]))
            let info = try pki.jws(payload: PKI.renewalInfo())
            let payload = PKI.notification(
                type: type, data: ["signedTransactionInfo": transaction, "signedRenewalInfo": info], ["notificationUUID": id])
            return (id, "{\"signedPayload\":\"\(try pki.jws(payload: payload))\"}")
        }
    }

    static func submission(_ id: String, _ body: String, type: String = "DID_RENEW") -> PurchaseSubmission {
        PurchaseSubmission(
            app: app, receivedAt: PKI.date(2025, 3, 1), source: .notification,
            notification: RawNotification(
                app: app, notificationId: id, notificationType: type, subtype: nil, environment: "Production", signedDate: nil,
                receivedAt: PKI.date(2025, 3, 1), body: body),
            storeEvent: .appStore(notification: type, subtype: nil), transactions: [])
    }

    /// Each body's row as stored: its base, and how many bytes it keeps.
    func rows() throws -> [(id: String, base: Int64?, bytes: Int)] {
        let connection = try SQLiteConnection(path: path, readOnly: true)
        return try connection.rows(
            "SELECT notification_id, body_base, length(CAST(body AS BLOB)) FROM purchase_notifications ORDER BY sequence"
        ) {
            ($0.text(0) ?? "", $0.optionalInteger(1), Int($0.integer(2)))
        }
    }

    /// The operator's sqlite3 on the same file, as the other store tests use it.
    func sqlite3(_ sql: String) throws {
        let sqlite = Process()
        sqlite.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        sqlite.arguments = ["sqlite3", path, sql]
        try sqlite.run()
        sqlite.waitUntilExit()
        #expect(sqlite.terminationStatus == 0)
    }

    @Test func bodiesAreKeptSmallAndReadBackAsPosted() async throws {
        defer { try? FileManager.default.removeItem(at: folder) }
        let bodies = try Self.bodies(12)
        let store = try await SQLiteStore.open(path: path)
        // In batches, as the group committer hands them over; one retry among them.
        _ = try await store.record([Self.submission(bodies[0].id, bodies[0].body)])
        _ = try await store.record(bodies[1..<6].map { Self.submission($0.id, $0.body) })
        let retried = try await store.record(
            [Self.submission(bodies[3].id, bodies[3].body)] + bodies[6...].map { Self.submission($0.id, $0.body) })
        #expect(retried.first?.duplicate == true)

        let stored = try rows()
        #expect(stored.map(\.id) == bodies.map(\.id))
        #expect(stored.first?.base == nil, "the first is kept as posted")
        #expect(stored.dropFirst().allSatisfy { $0.base == 1 }, "the others against it: \(stored)")
        let posted = bodies.dropFirst().map(\.body.utf8.count).reduce(0, +)
        let kept = stored.dropFirst().map(\.bytes).reduce(0, +)
        #expect(kept * 8 < posted, "\(kept) bytes kept for \(posted) posted")

        let read = try await store.notifications(app: nil, after: 0, limit: 100)
        #expect(read.map(\.body) == bodies.map(\.body))
        #expect(read.map(\.notificationId) == bodies.map(\.id))
        try await store.close()

        // After a restart the first body is kept as posted again, and is the new base.
        let reopened = try await SQLiteStore.open(path: path)
        let later = try Self.bodies(2)
        _ = try await reopened.record(later.map { Self.submission($0.id, $0.body) })
        #expect(try rows().suffix(2).map(\.base) == [nil, 13])
        #expect(try await reopened.notifications(app: nil, after: 12, limit: 10).map(\.body) == later.map(\.body))
        try await reopened.close()
    }

    /// The consumption responder reads what it answers from the same rows.
    @Test func consumptionRequestsReadTheirBodiesAsPosted() async throws {
        defer { try? FileManager.default.removeItem(at: folder) }
        let bodies = try Self.bodies(3, type: "CONSUMPTION_REQUEST")
        let store = try await SQLiteStore.open(path: path)
        _ = try await store.record(bodies.map { Self.submission($0.id, $0.body, type: "CONSUMPTION_REQUEST") })
        #expect(try rows().map(\.base) == [nil, 1, 1])
        let due = try await store.dueConsumptionRequests(at: PKI.date(2025, 3, 2), limit: 10)
        #expect(due.map(\.notification.body) == bodies.map(\.body))
        try await store.close()
    }

    /// A transaction that stored a base and then rolled back took the base's row with it: the
    /// bodies after it must not name that row, which SQLite gives to the next notification.
    @Test func aBaseRolledBackIsNotUsed() async throws {
        defer { try? FileManager.default.removeItem(at: folder) }
        let bodies = try Self.bodies(3)
        let store = try await SQLiteStore.open(path: path)
        try sqlite3(
            "CREATE TRIGGER refuse AFTER INSERT ON purchase_notifications WHEN NEW.notification_id = 'refused' "
                + "BEGIN SELECT RAISE(ABORT, 'refused for the test'); END;")
        await #expect(throws: (any Error).self) {
            try await store.record([Self.submission(bodies[0].id, bodies[0].body), Self.submission("refused", bodies[1].body)])
        }
        _ = try await store.record(bodies[1...].map { Self.submission($0.id, $0.body) })
        #expect(try rows().map(\.base) == [nil, 1])
        #expect(try await store.notifications(app: nil, after: 0, limit: 10).map(\.body) == Array(bodies[1...].map(\.body)))
        try await store.close()
    }

    /// Bodies under a kibibyte, and bodies the base does not shrink to a quarter (another store's
    /// chain), are kept as posted; the second becomes the base.
    @Test func smallOrUnlikeBodiesAreKeptAsPosted() async throws {
        defer { try? FileManager.default.removeItem(at: folder) }
        let bodies = try Self.bodies(1)
        let other = try Self.bodies(2)  // another PKI: another chain
        let store = try await SQLiteStore.open(path: path)
        _ = try await store.record([
            Self.submission("small", "{\"signedPayload\":\"x\"}"), Self.submission(bodies[0].id, bodies[0].body),
            Self.submission(other[0].id, other[0].body), Self.submission(other[1].id, other[1].body),
        ])
        #expect(try rows().map(\.base) == [nil, nil, nil, 3])
        #expect(
            try await store.notifications(app: nil, after: 0, limit: 10).map(\.body)
                == ["{\"signedPayload\":\"x\"}", bodies[0].body, other[0].body, other[1].body])
        try await store.close()
    }

    /// A damaged row is an error that says which, not a wrong body.
    @Test func aDamagedBodyIsAnError() async throws {
        defer { try? FileManager.default.removeItem(at: folder) }
        let bodies = try Self.bodies(2)
        let store = try await SQLiteStore.open(path: path)
        _ = try await store.record(bodies.map { Self.submission($0.id, $0.body) })
        try sqlite3("UPDATE purchase_notifications SET body = substr(body, 1, length(body) - 9) WHERE sequence = 2")
        do {
            _ = try await store.notifications(app: nil, after: 0, limit: 10)
            Issue.record("a cut body was read")
        } catch {
            #expect("\(error)".contains("notification 2's body cannot be read"))
        }
        try await store.close()
    }

    @Test func theDeflaterRoundTripsAndRefusesWhatIsNotItsOwn() throws {
        // Two bodies of one PKI, as the store sees them: the second fits in a quarter of its size.
        let bodies = try Self.bodies(2)
        let dictionary = Array(bodies[0].body.utf8)
        let body = Array(bodies[1].body.utf8)
        let deflater = try #require(PresetDictionaryDeflater(dictionary: dictionary))
        let compressed = try #require(body.withUnsafeBytes { deflater.compress($0, atMost: body.count / 4) })
        dictionary.withUnsafeBytes { dictionary in
            #expect(PresetDictionaryDeflater.inflate(compressed, dictionary: dictionary) == body)
            // Cut short, with bytes after it, or against another dictionary.
            #expect(PresetDictionaryDeflater.inflate(Array(compressed.dropLast(3)), dictionary: dictionary) == nil)
            #expect(PresetDictionaryDeflater.inflate(compressed + [0], dictionary: dictionary) == nil)
            #expect(PresetDictionaryDeflater.inflate(compressed, dictionary: dictionary, limit: body.count - 1) == nil)
            #expect(PresetDictionaryDeflater.inflate([0xff, 0xff, 0xff], dictionary: dictionary) == nil)
        }
        Array(repeating: UInt8(ascii: "a"), count: 100).withUnsafeBytes { dictionary in
            #expect(PresetDictionaryDeflater.inflate(compressed, dictionary: dictionary) != body)
        }
        // Random bytes do not fit in a quarter of their size; nothing fits in none.
        var generator = SystemRandomNumberGenerator()
        let noise = (0..<4096).map { _ in UInt8.random(in: 0...255, using: &generator) }
        noise.withUnsafeBytes {
            #expect(deflater.compress($0, atMost: 1024) == nil)
            #expect(deflater.compress($0, atMost: 0) == nil)
        }
        // Bodies over the window use its last 32 KiB, the same on both sides.
        let long = Array((String(repeating: "x", count: 40_000) + String(decoding: body, as: UTF8.self)).utf8)
        let longDeflater = try #require(PresetDictionaryDeflater(dictionary: long))
        let again = try #require(body.withUnsafeBytes { longDeflater.compress($0, atMost: body.count / 4) })
        long.withUnsafeBytes { #expect(PresetDictionaryDeflater.inflate(again, dictionary: $0) == body) }
    }
}
