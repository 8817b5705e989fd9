import AppStore
import AppStoreTestSupport
import CatalogKit
import CatalogServer
import CatalogTestSupport
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Ledger
import Logging
import NIOCore
import Storage
import Testing
import Time

/// Each revision's purchase record (`purchases.json` in its records): published with the revision,
/// a new revision when the settings change, and what the purchase endpoints read on every node, so
/// that a server without the catalog sources (a replica) binds evidence alike (docs/purchases.md,
/// "Replicas").
@Suite struct PurchaseRecordTests {
    typealias PKI = AppStoreTestSupport.AppStoreTestPKI
    static let app = "com.example.app"

    /// A folder with `catalog/` holding `source`, and its workflow into `public/`.
    static func workspace(_ source: String) throws -> (root: URL, workflow: CatalogWorkflow, tree: PublicTree) {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("purchase-record-\(UUID().uuidString)")
        let catalog = root.appendingPathComponent("catalog")
        try FileManager.default.createDirectory(at: catalog, withIntermediateDirectories: true)
        try Data(source.utf8).write(to: catalog.appendingPathComponent("\(app).plist"))
        let tree = PublicTree(root: root.appendingPathComponent("public"))
        return (root, CatalogWorkflow(catalogDirectory: catalog, catalogDisplayPath: "catalog", publicDirectory: tree.root), tree)
    }

    /// The record says what the endpoints need (settings, types, entitlements, durations, groups); the
    /// same sources again are the same revision; changed purchase settings alone are a new one, with
    /// feeds unchanged.
    @Test func theRecordIsPublishedWithEachRevisionAndSettingsAloneMakeARevision() throws {
        let (root, workflow, tree) = try Self.workspace(purchaseCatalog())
        defer { try? FileManager.default.removeItem(at: root) }
        #expect(!(try workflow.build(at: Timestamp(secondsSince1970: 1_700_000_000), dryRun: false)).hasErrors)
        let bytes = try #require(tree.purchaseRecordBytes(Self.app, revision: 1))
        let record = try #require(PurchaseRecord.decode(bytes))
        #expect(record.appAppleId == 1_234_567_890)
        #expect(record.transferPolicy == .keep)
        #expect(record.products.map(\.id) == ["com.example.app.pro.monthly", "com.example.app.pass"])
        #expect(record.products.first?.entitlements == ["pro"])
        #expect(record.products.first?.group == "pro")
        #expect(record.products.last?.type == .nonRenewing && record.products.last?.duration == "P1M")
        #expect(
            !FileManager.default.fileExists(
                atPath: tree.root.appendingPathComponent("v1/apps/\(Self.app)/revisions/1/purchases.json").path),
            "the record is private: never under public/")

        #expect(!(try workflow.build(at: Timestamp(secondsSince1970: 1_700_000_100), dryRun: false)).hasErrors)
        #expect(try tree.currentManifest(Self.app)?.revision == 1, "the same sources are the same revision")
        // A revision published before records carried one gets it in place, without a new revision.
        try FileManager.default.removeItem(at: tree.purchaseRecordURL(Self.app, 1))
        #expect(!(try workflow.build(at: Timestamp(secondsSince1970: 1_700_000_150), dryRun: false)).hasErrors)
        #expect(try tree.currentManifest(Self.app)?.revision == 1)
        #expect(tree.purchaseRecordBytes(Self.app, revision: 1) == bytes)
        let feed = try Data(contentsOf: tree.appDirectory(Self.app).appendingPathComponent("products.json"))

        try Data(purchaseCatalog(policy: "transfer").utf8).write(to: root.appendingPathComponent("catalog/\(Self.app).plist"))
        #expect(!(try workflow.build(at: Timestamp(secondsSince1970: 1_700_000_200), dryRun: false)).hasErrors)
        #expect(try tree.currentManifest(Self.app)?.revision == 2, "a changed transfer policy is a new revision")
        #expect(tree.purchaseRecordBytes(Self.app, revision: 2).flatMap(PurchaseRecord.decode)?.transferPolicy == .transfer)
        #expect(try Data(contentsOf: tree.appDirectory(Self.app).appendingPathComponent("products.json")) == feed)
    }

    /// A server with no catalog sources at all (as a replica has none) takes purchases by the
    /// published record, and an Xcode certificate named by the settings travelled in it as bytes:
    /// Xcode evidence verifies after the certificate's file is gone.
    @Test func aServerWithoutSourcesTakesPurchasesByTheRecordWithItsXcodeCertificate() async throws {
        let xcode = try PKI.xcode()
        let signingKey = try #require(xcode.signingKey)
        let certificateFile = FileManager.default.temporaryDirectory.appendingPathComponent("xcode-\(UUID().uuidString).pem")
        try Data((PKI.pem(xcode.certificate) + "\n").utf8).write(to: certificateFile)
        let (root, workflow, tree) = try Self.workspace(purchaseCatalog(xcode: certificateFile.path))
        defer { try? FileManager.default.removeItem(at: root) }
        let build = try workflow.build(at: Timestamp(secondsSince1970: Timestamp.now.secondsSince1970 - 10), dryRun: false)
        #expect(!build.hasErrors, "\(build.diagnostics)")
        // Neither the certificate's file nor the sources are there any more.
        try FileManager.default.removeItem(at: certificateFile)
        try FileManager.default.removeItem(at: root.appendingPathComponent("catalog"))

        let store = try await SQLiteStore.open(path: root.appendingPathComponent("var/catalog.sqlite").path)
        var purchases = PurchasesConfiguration()
        purchases.trust = PurchaseTrust(jwsRoots: [try PKI.ecdsa().root], receiptRoots: [])
        var configuration = ServeConfiguration()
        configuration.clock = { PurchaseEndpointTests.during }
        let application = buildApplication(
            publicDirectory: tree, port: 0, configuration: configuration, reportStore: store, purchaseStore: store, workflow: nil,
            purchasesConfiguration: purchases, logger: Logger(label: "test"))
        let header: [String: any Sendable] = [
            "alg": "ES256", "kid": "Apple_Xcode_Key", "x5c": [Data(PKI.der(xcode.certificate)).base64EncodedString()],
        ]
        let jws = try PKI.sign(header: header, payload: PKI.transaction(["environment": "Xcode"]), key: signingKey)
        try await application.test(.live) { client in
            let response = try await client.execute(
                uri: "/v1/apps/\(Self.app)/purchases", method: .post, headers: [.contentType: "application/json"],
                body: PurchaseEndpointTests.purchase(jws, token: "11111111-1111-4111-8111-111111111111"))
            #expect(response.status == .ok, "\(String(buffer: response.body))")
            #expect(PurchaseEndpointTests.entitlements(try PurchaseEndpointTests.json(response)) == ["pro"])
            let otherXcode = try PKI.xcode()
            let forged = try PKI.sign(
                header: ["alg": "ES256", "x5c": [Data(PKI.der(otherXcode.certificate)).base64EncodedString()]],
                payload: PKI.transaction(["environment": "Xcode"]), key: try #require(otherXcode.signingKey))
            let refused = try await client.execute(
                uri: "/v1/apps/\(Self.app)/purchases", method: .post, headers: [.contentType: "application/json"],
                body: PurchaseEndpointTests.purchase(forged, token: nil))
            #expect(refused.status == .forbidden)
        }
    }
}
