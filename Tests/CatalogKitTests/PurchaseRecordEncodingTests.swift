import CatalogTestSupport
import Foundation
import Testing

@testable import CatalogKit

/// A purchase record's bytes are written by hand (``PurchaseRecord/encoded``), and must stay what
/// `JSONEncoder` with sorted keys wrote before: a build compares them with the previous revision's
/// record, so any difference would make every unchanged catalog a new revision.
@Suite struct PurchaseRecordEncodingTests {
    /// What the records of earlier versions hold: Foundation's encoding of the same value.
    static func foundationBytes(_ record: PurchaseRecord) throws -> [UInt8] {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return [UInt8](try encoder.encode(record)) + [UInt8(ascii: "\n")]
    }

    static func record(
        appAppleId: Int64? = nil, environments: [PurchaseEnvironment] = [.production, .sandbox], policy: TransferPolicy = .keep,
        certificatePath: String? = nil, certificate: String? = nil, problem: String? = nil, webhookURL: String? = nil,
        secretFile: String? = nil, sandboxUnlocks: Bool? = nil, requireDeviceId: Bool? = nil, serverAPI: [String: String]? = nil,
        consumption: [String: Any]? = nil, play: [String: String]? = nil,
        products: [PurchaseRecord.Product]
    ) throws -> PurchaseRecord {
        // Built through Codable: the record's memberwise initialiser is the catalog's.
        var object: [String: Any] = [
            "format": PurchaseRecord.currentFormat, "app": "com.example.app", "environments": environments.map(\.rawValue),
            "transferPolicy": policy.rawValue,
            "products": products.map { product -> [String: Any] in
                var entry: [String: Any] = ["id": product.id, "entitlements": product.entitlements]
                if let type = product.type { entry["type"] = type.rawValue }
                if let duration = product.duration { entry["duration"] = duration }
                if let group = product.group { entry["group"] = group }
                if let period = product.period { entry["period"] = period }
                if let play = product.play { entry["play"] = try? JSONSerialization.jsonObject(with: JSONEncoder().encode(play)) }
                return entry
            },
        ]
        if let appAppleId { object["appAppleId"] = appAppleId }
        if let certificatePath { object["xcodeCertificatePath"] = certificatePath }
        if let certificate { object["xcodeCertificate"] = certificate }
        if let problem { object["xcodeCertificateProblem"] = problem }
        if let webhookURL { object["webhookURL"] = webhookURL }
        if let secretFile { object["webhookSecretFile"] = secretFile }
        if let sandboxUnlocks { object["sandboxUnlocks"] = sandboxUnlocks }
        if let requireDeviceId { object["requireDeviceId"] = requireDeviceId }
        if let serverAPI { object["serverAPI"] = serverAPI }
        if let consumption { object["consumption"] = consumption }
        if let play { object["play"] = play }
        return try JSONDecoder().decode(PurchaseRecord.self, from: JSONSerialization.data(withJSONObject: object))
    }

    static func product(
        _ id: String, _ type: ProductType?, _ entitlements: [String], duration: String? = nil, group: String? = nil,
        play: PlayProduct? = nil
    ) throws -> PurchaseRecord.Product {
        var product = try JSONDecoder().decode(
            PurchaseRecord.Product.self, from: Data(#"{"id":"x","entitlements":[]}"#.utf8))
        product.id = id
        product.type = type
        product.entitlements = entitlements
        product.duration = duration
        product.group = group
        product.play = play
        product.period = play == nil ? nil : "P1M"
        return product
    }

    @Test func everyFieldSetIsWrittenAsFoundationWroteIt() throws {
        let record = try Self.record(
            appAppleId: 1_234_567_890, environments: [.production, .sandbox, .xcode], policy: .transfer,
            certificatePath: "certs/StoreKit Testing.cer", certificate: "MIIB+/==", webhookURL: "https://example.com/hooks/a?b=c&d=/e",
            secretFile: "/etc/catalog/webhook secret", sandboxUnlocks: false, requireDeviceId: false,
            serverAPI: ["keyId": "2X9R4HXF34", "issuerId": "57246542-96fe-1a63-e053-0824d011072a", "keyFile": "/etc/catalog/AuthKey.p8"],
            consumption: ["sampleContentProvided": true, "refundPreference": "grantProrated"],
            play: [
                "packageName": "com.example.app", "licenseKey": "MIIBIjANBgkqhkiG9w0BAQEFAAOCAQ8AMIIBCgKCAQEA+/",
                "pushAudience": "https://example.com/play",
                "pushServiceAccount": "push@example.iam.gserviceaccount.com",
                "serviceAccountKeyFile": "/etc/catalog/play-service-account.json",
            ],
            products: [
                try Self.product(
                    "com.example.app.pro.monthly", .autoRenewable, ["pro", "ad-free"], group: "pro",
                    play: PlayProduct(productId: "pro", basePlan: "monthly", offer: "intro-week")),
                try Self.product("com.example.app.pass", .nonRenewing, ["com.example.app.pass"], duration: "P1M"),
                try Self.product(
                    "com.example.app.coins", .consumable, [], play: PlayProduct(productId: "coins", purchaseOption: "bundle-10")),
                try Self.product("com.example.app.untyped", nil, ["x"]),
            ])
        #expect(record.encoded == (try Self.foundationBytes(record)))
    }

    @Test func theFewestFieldsAreWrittenAsFoundationWroteThem() throws {
        let record = try Self.record(environments: [], products: [])
        #expect(record.encoded == (try Self.foundationBytes(record)))
        let problem = try Self.record(
            certificatePath: "missing.cer", problem: "missing.cer could not be read when the revision was published",
            products: [try Self.product("a", .nonConsumable, ["a"])])
        #expect(problem.encoded == (try Self.foundationBytes(problem)))
    }

    /// Strings the sources can carry (XML allows tab, line feed and carriage return, and any
    /// character above them) and the escapes JSON needs: quotes, backslashes, slashes unescaped.
    @Test func stringsNeedingEscapesAreEscapedAsFoundationEscapedThem() throws {
        let awkward = "a \"quoted\" back\\slash /slash/ tab\tline\nreturn\r é 漢字 🎉 \u{7F} \u{2028}"
        let record = try Self.record(
            certificatePath: awkward, webhookURL: awkward, secretFile: awkward,
            products: [try Self.product(awkward, .consumable, [awkward, ""], duration: awkward, group: awkward)])
        #expect(record.encoded == (try Self.foundationBytes(record)))
        #expect(PurchaseRecord.decode(record.encoded) == record)
    }

    /// Control characters no XML source can hold, for completeness: a path built elsewhere could.
    @Test func controlCharactersAreEscapedAsFoundationEscapedThem() throws {
        let control = String(decoding: (1..<0x20).map { UInt8($0) }, as: UTF8.self)
        let record = try Self.record(secretFile: control, products: [])
        #expect(record.encoded == (try Self.foundationBytes(record)))
    }

    /// A build writes the record straight from the catalog (`PurchaseRecord.encoded(listing:)`):
    /// the same bytes as the record's value, and as Foundation's encoding of it.
    @Test func aCatalogsRecordIsWrittenAsItsValueIs() throws {
        try withCatalog { catalog in
            try catalog.write("com.example.app.plist", purchaseCatalog(policy: "transfer"))
            #expect(catalog.diagnostics() == [])
            let app = try #require(catalog.workflow.validate().catalogs.first)
            let read: (String) -> [UInt8]? = { _ in nil }
            let record = PurchaseRecord(app, read: read)
            #expect(record.products.count == 2)
            #expect(PurchaseRecord(settingsOf: app, read: read).encoded(listing: app.products) == record.encoded)
            #expect(record.encoded == (try Self.foundationBytes(record)))
        }
    }
}
