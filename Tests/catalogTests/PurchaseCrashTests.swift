import AppStore
import AppStoreTestSupport
import Foundation
import Ledger
import Storage
import Synchronization
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif
#if canImport(Glibc)
    import Glibc
#endif

/// `catalog serve` killed with SIGKILL while App Store notifications pour in: every notification
/// it answered 200 is in the store afterwards, with its payloads (docs/purchases.md, "Durability").
@Suite struct PurchaseCrashTests {
    typealias PKI = AppStoreTestPKI

    @Test func aKilledServerLosesNoAcknowledgedNotification() async throws {
        let pki = try PKI.ecdsa()
        try await CommandTests.withWorkspace { workspace in
            try workspace.write("catalog/com.example.app.plist", CustomersCommandTests.catalog)
            try workspace.write("root.pem", PKI.pem(pki.root) + "\n")
            // Signed beforehand, so that the server, not the test, is what the kill interrupts.
            var bodies: [(uuid: String, body: Data)] = []
            for index in 0..<600 {
                let uuid = UUID().uuidString.lowercased()
                let id = String(3_000_000_000_000_000 + index)
                let jws = try pki.jws(
                    payload: PKI.notification(
                        type: "SUBSCRIBED",
                        data: [
                            "signedTransactionInfo": try pki.jws(
                                payload: PKI.transaction(["transactionId": id, "originalTransactionId": id]))
                        ],
                        ["notificationUUID": uuid]))
                bodies.append((uuid, Data("{\"signedPayload\":\"\(jws)\"}".utf8)))
            }
            let server = try ServeProcess(
                in: workspace, ["--root-certificate", "root.pem", "--store", "sqlite:var/catalog.sqlite"])
            #expect(try await server.body(of: "/v1/apps/com.example.app/products.json", within: 30) != nil, "\(server.logText)")

            let signed = bodies
            let acknowledged = Acknowledged()
            let pid = server.process.processIdentifier
            let url = server.url("/v1/apps/com.example.app/notifications/app-store")
            let killer = Task {
                // Killed once some are acknowledged and more are on their way.
                for _ in 0..<600 where acknowledged.count < 60 { try await Task.sleep(for: .milliseconds(10)) }
                kill(pid, SIGKILL)
            }
            await withTaskGroup(of: Void.self) { group in
                for lane in 0..<16 {
                    group.addTask {
                        for (uuid, body) in signed.enumerated().filter({ $0.offset % 16 == lane }).map(\.element) {
                            var request = URLRequest(url: url)
                            request.httpMethod = "POST"
                            request.setValue("application/json", forHTTPHeaderField: "Content-Type")
                            request.httpBody = body
                            request.timeoutInterval = 5
                            guard let (_, response) = try? await URLSession.shared.data(for: request) else { return }
                            if (response as? HTTPURLResponse)?.statusCode == 200 { acknowledged.insert(uuid) }
                        }
                    }
                }
            }
            try await killer.value
            _ = try await server.stop(with: SIGKILL)
            let acked = acknowledged.all
            #expect(acked.count >= 60, "too few acknowledged before the kill to prove anything: \(server.logText)")
            #expect(acked.count < bodies.count, "the kill came after every notification; it interrupted nothing")

            let store = try await SQLiteStore.open(path: workspace.root.appendingPathComponent("var/catalog.sqlite").path)
            let stored = Set(try await store.notifications(app: "com.example.app", after: 0, limit: 10_000).map(\.notificationId))
            let lost = acked.subtracting(stored)
            #expect(lost.isEmpty, "\(lost.count) acknowledged notifications lost")
            // Each kept notification's transaction is there with it: one transaction, not two.
            let missingPayloads = try await bodies.enumerated().asyncFilter { index, element in
                guard acked.contains(element.uuid) else { return false }
                return try await store.customer(app: "com.example.app", id: String(3_000_000_000_000_000 + index)) == nil
            }
            #expect(missingPayloads.isEmpty)
            try await store.close()
        }
    }
}

/// The notifications the server answered 200, from every lane.
private final class Acknowledged: Sendable {
    private let uuids = Mutex<Set<String>>([])
    var count: Int { uuids.withLock { $0.count } }
    var all: Set<String> { uuids.withLock { $0 } }
    func insert(_ uuid: String) { uuids.withLock { _ = $0.insert(uuid) } }
}

extension Sequence {
    fileprivate func asyncFilter(_ keep: (Element) async throws -> Bool) async rethrows -> [Element] {
        var kept: [Element] = []
        for element in self where try await keep(element) { kept.append(element) }
        return kept
    }
}
