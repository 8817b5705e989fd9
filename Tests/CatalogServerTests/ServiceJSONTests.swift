import AppStore
import CatalogKit
import Foundation
import Ledger
import Testing
import Time
import Yams

@testable import CatalogServer

/// Every JSON answer that is not a feed, as the server writes it, against its schema in
/// `openapi.yaml`: a member the schema requires and the answer lacks, a member the answer has and the
/// schema does not document, or a value of another type fails here, so the two cannot drift apart.
@Suite struct ServiceJSONTests {
    /// The bundled document, parsed; never changed once read.
    nonisolated(unsafe) static let document: [String: Any] = {
        (try? Yams.load(yaml: String(decoding: OpenAPIDocument.bytes, as: UTF8.self)) as? [String: Any]) ?? [:]
    }()

    /// The JSON schema of a documented answer.
    static func schema(_ path: String, _ method: String, _ status: String) throws -> [String: Any] {
        let paths = try #require(document["paths"] as? [String: Any])
        let operation = try #require((paths[path] as? [String: Any])?[method] as? [String: Any], "\(method) \(path)")
        let responses = try #require(operation["responses"] as? [String: Any])
        let response = resolve(try #require(responses[status] as? [String: Any], "\(method) \(path) \(status)"))
        let content = try #require(response["content"] as? [String: Any])
        return try #require((content["application/json"] as? [String: Any])?["schema"] as? [String: Any])
    }

    static func resolve(_ node: [String: Any]) -> [String: Any] {
        guard let reference = node["$ref"] as? String, reference.hasPrefix("#/") else { return node }
        var target: Any? = document
        for key in reference.dropFirst(2).split(separator: "/") { target = (target as? [String: Any])?[String(key)] }
        return resolve(target as? [String: Any] ?? [:])
    }

    /// A JSON value as the answer holds it: a boolean is never a number, an integer never a string.
    indirect enum Value: Decodable {
        case boolean(Bool)
        case integer(Int)
        case number(Double)
        case string(String)
        case array([Value])
        case object([String: Value])
        case null

        init(from decoder: any Decoder) throws {
            let container = try decoder.singleValueContainer()
            if container.decodeNil() {
                self = .null
            } else if let value = try? container.decode(Bool.self) {
                self = .boolean(value)
            } else if let value = try? container.decode(Int.self) {
                self = .integer(value)
            } else if let value = try? container.decode(Double.self) {
                self = .number(value)
            } else if let value = try? container.decode(String.self) {
                self = .string(value)
            } else if let value = try? container.decode([Value].self) {
                self = .array(value)
            } else {
                self = .object(try container.decode([String: Value].self))
            }
        }

        var isNull: Bool {
            if case .null = self { true } else { false }
        }

        var typeName: String {
            switch self {
            case .boolean: "boolean"
            case .integer: "integer"
            case .number: "number"
            case .string: "string"
            case .array: "array"
            case .object: "object"
            case .null: "null"
            }
        }

        func hasType(_ type: String) -> Bool {
            typeName == type || (type == "number" && typeName == "integer")
        }
    }

    /// Where `value` departs from `schema`, one line each; empty when it conforms. Objects must document
    /// every member they hold.
    static func problems(_ value: Value, _ node: [String: Any], at path: String = "$") -> [String] {
        let schema = resolve(node)
        // One of several shapes: the value conforms when it conforms to one; otherwise the nearest miss.
        if let alternatives = schema["oneOf"] as? [[String: Any]], !alternatives.isEmpty {
            let misses = alternatives.map { problems(value, $0, at: path) }
            return misses.min { $0.count < $1.count } ?? []
        }
        if let types = (schema["type"] as? [String]) ?? (schema["type"] as? String).map({ [$0] }),
            !types.contains(where: { value.hasType($0) })
        {
            return ["\(path): \(value.typeName) is not \(types.joined(separator: " or "))"]
        }
        if let values = schema["enum"] as? [String] {
            guard case .string(let text) = value, values.contains(text) else {
                return ["\(path): \(value) is not one of \(values.joined(separator: ", "))"]
            }
        }
        var found: [String] = []
        switch value {
        case .object(let object):
            let properties = schema["properties"] as? [String: Any] ?? [:]
            // A map (verdicts by identifier) or a product's further keys: the schema of every other member.
            let others = schema["additionalProperties"] as? [String: Any]
            for required in schema["required"] as? [String] ?? [] where object[required] == nil {
                found.append("\(path): \(required) is required and missing")
            }
            for (key, member) in object.sorted(by: { $0.key < $1.key }) {
                guard let documented = properties[key] as? [String: Any] ?? others else {
                    found.append("\(path).\(key) is not documented")
                    continue
                }
                found += problems(member, documented, at: "\(path).\(key)")
            }
        case .array(let array):
            if let items = schema["items"] as? [String: Any] {
                for (index, item) in array.enumerated() { found += problems(item, items, at: "\(path)[\(index)]") }
            }
        case .integer(let number):
            if let minimum = schema["minimum"] as? Int, number < minimum { found.append("\(path): \(number) is below \(minimum)") }
        default:
            break
        }
        return found
    }

    /// A named schema of `components`.
    static func component(_ name: String) throws -> [String: Any] {
        let components = try #require(document["components"] as? [String: Any])
        return try #require((components["schemas"] as? [String: Any])?[name] as? [String: Any], "\(name)")
    }

    static func parse(_ bytes: [UInt8]) throws -> Value {
        try JSONDecoder().decode(Value.self, from: Data(bytes))
    }

    static let publishedAt = "2026-03-01T12:00:00Z"

    @Test func theAppListIsAsDocumented() throws {
        let list = AppList(apps: [.init(app: "com.example.served", revision: 2, publishedAt: Self.publishedAt)])
        let bytes = ServiceJSON.encode(list)
        #expect(Self.problems(try Self.parse(bytes), try Self.schema("/v1/apps", "get", "200")) == [])
        #expect(try JSONDecoder().decode(AppList.self, from: Data(bytes)) == list)
        #expect(Self.problems(try Self.parse(ServiceJSON.encode(AppList(apps: []))), try Self.schema("/v1/apps", "get", "200")) == [])
    }

    @Test func theRevisionListIsAsDocumented() throws {
        let list = RevisionList(
            app: "com.example.served",
            revisions: [.init(revision: 2, publishedAt: Self.publishedAt), .init(revision: 1, publishedAt: Self.publishedAt)])
        let bytes = ServiceJSON.encode(list)
        #expect(Self.problems(try Self.parse(bytes), try Self.schema("/v1/apps/{app}/revisions", "get", "200")) == [])
        #expect(try JSONDecoder().decode(RevisionList.self, from: Data(bytes)) == list)
    }

    @Test func errorsAreAsDocumented() throws {
        let schema = try Self.schema("/v1/apps/{app}/revisions", "get", "404")
        #expect(Self.problems(try Self.parse(JSONError.body("no published app 'x' \"quoted\" \n")), schema) == [])
    }

    @Test(arguments: [(3, 3, false), (3, 1, false), (3, 3, true), (2, 0, true)])
    func reportAnswersAreAsDocumented(count: Int, stored: Int, duplicate: Bool) throws {
        let schema = try Self.schema("/v1/apps/{app}/invalid-identifiers", "post", "202")
        let answer = ReportIntake.accepted(count: count, stored: stored, duplicate: duplicate)
        #expect(Self.problems(try Self.parse(answer), schema) == [])
    }

    /// The checker itself: what drift looks like.
    @Test func anUndocumentedOrMissingMemberIsFound() throws {
        let schema = try Self.schema("/v1/apps", "get", "200")
        #expect(Self.problems(try Self.parse(Array(#"{"apps":[],"next":1}"#.utf8)), schema) == ["$.next is not documented"])
        #expect(
            Self.problems(try Self.parse(Array(#"{"apps":[{"app":"a","revision":"2"}]}"#.utf8)), schema) == [
                "$.apps[0]: publishedAt is required and missing", "$.apps[0].revision: string is not integer",
            ])
        #expect(Self.problems(try Self.parse(Array(#"{"apps":[{"app":"a","revision":true,"publishedAt":"t"}]}"#.utf8)), schema).count == 1)
    }

    /// Keys are sorted, so that an answer's bytes do not change between requests.
    @Test func answersAreByteStable() {
        let list = AppList(apps: [.init(app: "com.example.served", revision: 2, publishedAt: Self.publishedAt)])
        let first = ServiceJSON.encode(list)
        for _ in 0..<20 { #expect(ServiceJSON.encode(list) == first) }
        #expect(
            String(decoding: first, as: UTF8.self)
                == #"{"apps":[{"app":"com.example.served","publishedAt":"2026-03-01T12:00:00Z","revision":2}]}"#)
    }

    // MARK: - Purchases

    static let now = Date(timeIntervalSince1970: 1_772_366_400)  // 2026-03-01T12:00:00Z

    /// A transaction as the store keeps it: Apple's field names, instants in milliseconds.
    static func transaction(_ fields: [String: Any]) throws -> LedgerTransaction {
        let data = try JSONSerialization.data(withJSONObject: fields, options: [.sortedKeys])
        return try #require(LedgerJSON.decode(LedgerTransaction.self, String(decoding: data, as: UTF8.self)))
    }

    /// A customer with something in every member of the answer: an active subscription (a period, an
    /// entitlement, an offer), a consumable (credits), a refunded purchase, and a transfer.
    static func customer() throws -> (CustomerRecord, LedgerCatalog) {
        let ms = { (days: Double) in Int64((now.timeIntervalSince1970 + days * 86_400) * 1000) }
        let subscription = try transaction([
            "transactionId": "1001", "originalTransactionId": "1000", "productId": "pro.monthly", "type": "Auto-Renewable Subscription",
            "quantity": 1, "inAppOwnershipType": "PURCHASED", "environment": "Production", "bundleId": "com.example.served",
            "subscriptionGroupIdentifier": "g1", "purchaseDate": ms(-10), "expiresDate": ms(20), "signedDate": ms(-10),
            "offerType": 1, "offerIdentifier": "intro", "offerDiscountType": "FREE_TRIAL",
        ])
        let coins = try transaction([
            "transactionId": "2000", "originalTransactionId": "2000", "productId": "coins", "type": "Consumable", "quantity": 3,
            "inAppOwnershipType": "PURCHASED", "environment": "Production", "purchaseDate": ms(-2), "signedDate": ms(-2),
        ])
        let refunded = try transaction([
            "transactionId": "3000", "originalTransactionId": "3000", "productId": "lifetime", "type": "Non-Consumable", "quantity": 1,
            "inAppOwnershipType": "PURCHASED", "environment": "Sandbox", "purchaseDate": ms(-5), "signedDate": ms(-1),
            "revocationDate": ms(-1), "revocationReason": 1,
        ])
        let record = CustomerRecord(
            id: 7, app: "com.example.served",
            keys: [CustomerKey(kind: .purchase, value: "1000"), CustomerKey(kind: .purchase, value: "2000")],
            purchases: ["1000", "2000", "3000"].map { PurchaseReference(.appStore, $0) }, transactions: [subscription, coins, refunded],
            states: [],
            transfers: [
                TransferEvent(
                    purchase: PurchaseReference(.appStore, "1000"), fromCustomer: 3, toCustomer: 7, outcome: .transferred, at: now)
            ])
        let catalog = LedgerCatalog(products: [
            "pro.monthly": LedgerProduct(entitlements: ["pro"]), "coins": LedgerProduct(entitlements: []),
            "lifetime": LedgerProduct(entitlements: ["pro"]),
        ])
        return (record, catalog)
    }

    @Test(arguments: [true, false])
    func customerAnswersAreAsDocumented(full: Bool) throws {
        let (record, catalog) = try Self.customer()
        let answer = CustomerAnswer(record, at: Self.now, catalog: catalog, full: full)
        let value = try Self.parse(answer.json)
        #expect(Self.problems(value, try Self.schema("/v1/apps/{app}/customers/{id}", "get", "200")) == [])
        #expect(Self.problems(value, try Self.schema("/v1/apps/{app}/purchases", "post", "200")) == [])
        #expect(Self.problems(value, try Self.schema("/v1/apps/{app}/customers/lookup", "post", "200")) == [])
        #expect(Self.problems(value, try Self.schema("/v1/admin/apps/{app}/customers/{id}", "get", "200")) == [])
        #expect(try JSONDecoder().decode(CustomerAnswer.Body.self, from: Data(answer.json)) == answer.body)
        // Every list holds something, so that each item's members were held to their schema.
        #expect(answer.body.entitlements.map(\.entitlement) == ["pro"])
        #expect(answer.body.credits.map(\.quantity) == [3])
        #expect(answer.body.keys.count == 2)
        if full {
            #expect(answer.body.purchases?.count == 3)
            #expect(answer.body.purchases?.contains { $0.revocationReason == 1 } == true)
            #expect(answer.body.periods?.first?.offerType == 1)
            #expect(answer.body.periods?.first?.active == true)
            #expect(answer.body.transfers?.count == 1)
        } else {
            #expect(answer.body.purchases == nil && answer.body.periods == nil && answer.body.transfers == nil)
        }
    }

    /// The checker looks inside the customer's lists: a member an item has and the schema does not
    /// document is found.
    @Test func anUndocumentedMemberOfACustomersEntitlementIsFound() throws {
        let schema = try Self.schema("/v1/apps/{app}/customers/{id}", "get", "200")
        let drifted =
            #"{"customer":1,"keys":[],"credits":[],"entitlements":[{"entitlement":"pro","environment":"Production","productId":"p","transactionId":"1","inGracePeriod":false,"owner":"x"}]}"#
        #expect(Self.problems(try Self.parse(Array(drifted.utf8)), schema) == ["$.entitlements[0].owner is not documented"])
    }

    @Test(arguments: [false, true])
    func notificationAnswersAreAsDocumented(duplicate: Bool) throws {
        let answer = NotificationAnswer(notificationUUID: "5f2a", stored: duplicate ? nil : true, duplicate: duplicate ? true : nil)
        let bytes = ServiceJSON.encode(answer)
        #expect(Self.problems(try Self.parse(bytes), try Self.schema("/v1/apps/{app}/notifications/app-store", "post", "200")) == [])
        #expect(try JSONDecoder().decode(NotificationAnswer.self, from: Data(bytes)) == answer)
    }

    /// The answer written by hand is the encoder's, byte for byte, whatever id Apple signed.
    @Test(arguments: ["5f2a", "a0b1c2d3-0000-4000-8000-000000000001", #"q"uote\back/slash"#, "tab\tnew\nline\u{1}", "é🙂"])
    func notificationAnswersAreWrittenAsTheEncoderWrites(uuid: String) {
        for answer in [
            NotificationAnswer(notificationUUID: uuid, stored: true), NotificationAnswer(notificationUUID: uuid, duplicate: true),
        ] {
            #expect(answer.json == ServiceJSON.encode(answer), "\(String(decoding: answer.json, as: UTF8.self))")
        }
    }

    @Test(arguments: [nil, 21_002])
    func refusalsAreAsDocumented(status: Int?) throws {
        let refusal = RefusalAnswer(error: .init(message: "the signature does not verify", code: "forged", status: status))
        let bytes = ServiceJSON.encode(refusal)
        for path in ["/v1/apps/{app}/purchases", "/v1/apps/{app}/notifications/app-store"] {
            #expect(Self.problems(try Self.parse(bytes), try Self.schema(path, "post", "403")) == [])
        }
        #expect(try JSONDecoder().decode(RefusalAnswer.self, from: Data(bytes)) == refusal)
    }

    @Test(arguments: [true, false])
    func webhookBodiesAreAsDocumented(bound: Bool) throws {
        let (record, catalog) = try Self.customer()
        let body = WebhookBody(
            id: "0f6e", type: WebhookEventType.renewed.rawValue, app: "com.example.served", environment: "Production",
            originalTransactionId: "1000", transactionId: "1001", productId: "pro.monthly", occurredAt: CustomerAnswer.rfc3339(Self.now),
            createdAt: CustomerAnswer.rfc3339(Self.now),
            customer: bound ? CustomerAnswer(record, at: Self.now, catalog: catalog, full: false).body : nil)
        let bytes = ServiceJSON.encode(body)
        #expect(Self.problems(try Self.parse(bytes), try Self.component("WebhookEvent")) == [])
        #expect(try JSONDecoder().decode(WebhookBody.self, from: Data(bytes)) == body)
        // The receiver always finds `customer`, null when no customer is bound.
        if case .object(let object) = try Self.parse(bytes) {
            #expect(object["customer"] != nil)
            #expect(object["customer"]?.isNull == !bound)
        } else {
            Issue.record("the body is not an object")
        }
        // Drift inside the customer is found through `oneOf`.
        let drifted = Array(
            String(decoding: bytes, as: UTF8.self).replacingOccurrences(of: #""customer":null"#, with: #""customer":{"customer":"7"}"#).utf8
        )
        if !bound { #expect(!Self.problems(try Self.parse(drifted), try Self.component("WebhookEvent")).isEmpty) }
    }

    // MARK: - Editor API

    static let diff = DiffAnswer(
        added: ["com.example.new"], removed: ["com.example.old"], released: ["com.example.held"],
        changed: [.init(id: "com.example.pro", details: ["price: tier 3 -> tier 4"])],
        quarantined: [.init(id: "com.example.bad", reason: "invalid in 3 reports")])
    static let sourceRevision = String(repeating: "ab", count: 32)

    @Test(arguments: [false, true])
    func publicationAnswersAreAsDocumented(dryRun: Bool) throws {
        let answer = PublicationAnswer(
            app: "com.example.served", dryRun: dryRun, unchanged: false, revision: 3, diff: Self.diff, sourceRevision: Self.sourceRevision)
        let bytes = ServiceJSON.encode(answer)
        #expect(Self.problems(try Self.parse(bytes), try Self.schema("/v1/admin/apps/{app}/publish", "post", "200")) == [])
        #expect(try JSONDecoder().decode(PublicationAnswer.self, from: Data(bytes)) == answer)
    }

    @Test func historyDiffAnswersAreAsDocumented() throws {
        let schema = try Self.schema("/v1/admin/apps/{app}/diff", "get", "200")
        typealias Side = CatalogWorkflow.DiffSide
        let sides: [(from: Side?, to: Side)] = [(nil, .revision(1)), (.revision(1), .revision(2)), (.revision(2), .sources)]
        for (from, to) in sides {
            let bytes = ServiceJSON.encode(HistoryDiffAnswer(app: "com.example.served", from: from, to: to, diff: Self.diff))
            #expect(Self.problems(try Self.parse(bytes), schema) == [])
            guard case .object(let object) = try Self.parse(bytes) else {
                Issue.record("the answer is not an object")
                continue
            }
            // `from` is required: null for the first revision, never left out.
            #expect(object["from"]?.isNull == (from == nil))
            if case .sources = to {
                guard case .string(let text)? = object["to"] else {
                    Issue.record("to is not a string")
                    continue
                }
                #expect(text == "sources")
            }
        }
    }

    @Test func rollbackAnswersAreAsDocumented() throws {
        let answer = RollbackAnswer(
            app: "com.example.served", restored: 1, revision: 4, unchanged: false, written: "Products/catalog.plist",
            removed: ["Products/extra.plist"], keptRetired: ["com.example.new"], diff: Self.diff, sourceRevision: Self.sourceRevision)
        let bytes = ServiceJSON.encode(answer)
        let schema = try Self.schema("/v1/admin/apps/{app}/revisions/{revision}/rollback", "post", "200")
        #expect(Self.problems(try Self.parse(bytes), schema) == [])
        #expect(try JSONDecoder().decode(RollbackAnswer.self, from: Data(bytes)) == answer)
    }

    @Test(arguments: DecisionAnswer.Decision.allCases)
    func decisionAnswersAreAsDocumented(decision: DecisionAnswer.Decision) throws {
        let answer = DecisionAnswer(
            decision: decision, id: "com.example.held", summary: "released com.example.held", sourceRevision: Self.sourceRevision)
        let bytes = ServiceJSON.encode(answer)
        let path = decision == .released ? "/v1/admin/apps/{app}/feedback/{id}/release" : "/v1/admin/apps/{app}/feedback/{id}/quarantine"
        #expect(Self.problems(try Self.parse(bytes), try Self.schema(path, "post", "200")) == [])
        #expect(try JSONDecoder().decode(DecisionAnswer.self, from: Data(bytes)) == answer)
    }

    @Test func editorAppListsAreAsDocumented() throws {
        let list = EditorAppList(apps: [
            .init(app: "com.example.served", sourceRevision: Self.sourceRevision, publishedRevision: 2),
            .init(app: "com.example.draft", sourceRevision: Self.sourceRevision, publishedRevision: nil),
        ])
        let bytes = ServiceJSON.encode(list)
        #expect(Self.problems(try Self.parse(bytes), try Self.schema("/v1/admin/apps", "get", "200")) == [])
        #expect(try JSONDecoder().decode(EditorAppList.self, from: Data(bytes)) == list)
        // A never-published app's revision is null, not left out.
        #expect(String(decoding: bytes, as: UTF8.self).contains(#""publishedRevision":null"#))
    }

    @Test func dailyReportsAreAsDocumented() throws {
        let answer = DailyReportsAnswer(
            app: "com.example.served", identifier: "com.example.pro",
            days: [.init(day: "2026-02-28", reports: 0), .init(day: "2026-03-01", reports: 4)])
        let bytes = ServiceJSON.encode(answer)
        #expect(Self.problems(try Self.parse(bytes), try Self.schema("/v1/admin/apps/{app}/reports/daily", "get", "200")) == [])
        #expect(try JSONDecoder().decode(DailyReportsAnswer.self, from: Data(bytes)) == answer)
    }

    // MARK: - Editor API: an app's state and an edit

    /// A real catalog folder: one app whose product fills every member of the `Product` schema (a
    /// real `1.0` in its metadata among them), a second product with a rule broken softly (a warning),
    /// and a feedback file with a verdict of each kind.
    static func editorWorkflow(published: Bool) throws -> (CatalogWorkflow, URL) {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("service-json-\(UUID().uuidString)")
        let catalog = root.appendingPathComponent("catalog")
        try FileManager.default.createDirectory(at: catalog, withIntermediateDirectories: true)
        let app = "com.example.served"
        let source = """
            <?xml version="1.0" encoding="UTF-8"?>
            <plist version="1.0"><dict><key>platforms</key><array><string>iOS</string><string>macOS</string></array>
            <key>products</key><array>
            <dict><key>id</key><string>com.example.served.pro</string><key>type</key><string>auto-renewable</string>
            <key>referenceName</key><string>Pro "monthly"</string><key>status</key><string>cleared</string>
            <key>platforms</key><array><string>iOS</string></array><key>minimumAppVersion</key><string>2.1</string>
            <key>availableFrom</key><date>2026-01-01T00:00:00Z</date><key>availableUntil</key><date>2030-01-01T00:00:00Z</date>
            <key>subscription</key><dict><key>group</key><string>pro</string><key>period</key><string>P1M</string><key>rank</key><integer>1</integer></dict>
            <key>displayOrder</key><integer>2</integer>
            <key>metadata</key><dict><key>weight</key><real>1.0</real><key>tiers</key><array><integer>3</integer><true/></array></dict></dict>
            <dict><key>id</key><string>com.example.served.coins</string><key>type</key><string>consumable</string><key>colour</key><string>gold</string></dict>
            <dict><key>id</key><string>com.example.served.gems</string><key>type</key><string>consumable</string></dict>
            </array></dict></plist>
            """
        try Data(source.utf8).write(to: catalog.appendingPathComponent("\(app).plist"))
        let workflow = CatalogWorkflow(
            catalogDirectory: catalog, catalogDisplayPath: "catalog", publicDirectory: root.appendingPathComponent("public"))
        if published { #expect(!(try workflow.build(at: Timestamp(secondsSince1970: 1_772_366_400), dryRun: false)).hasErrors) }
        let feedback = """
            <?xml version="1.0" encoding="UTF-8"?>
            <plist version="1.0"><dict><key>verdicts</key><dict>
            <key>com.example.served.gems</key><dict><key>status</key><string>quarantined</string>
            <key>reason</key><string>reported invalid by 23 installs</string><key>since</key><date>2026-03-01T12:00:00Z</date></dict>
            <key>com.example.served.coins</key><dict><key>status</key><string>suspect</string>
            <key>reason</key><string>written by hand</string><key>since</key><date>2026-03-01T11:00:00Z</date></dict>
            </dict></dict></plist>
            """
        try Data(feedback.utf8).write(to: workflow.feedbackURL(app))
        return (workflow, root)
    }

    @Test(arguments: [false, true])
    func appStatesAreAsDocumented(published: Bool) throws {
        let (workflow, root) = try Self.editorWorkflow(published: published)
        defer { try? FileManager.default.removeItem(at: root) }
        let state = try workflow.appState("com.example.served")
        let bytes = AppStateAnswer(state).json
        #expect(Self.problems(try Self.parse(bytes), try Self.schema("/v1/admin/apps/{app}", "get", "200")) == [])
        let answer = try JSONDecoder().decode(AppStateAnswer.self, from: Data(bytes))
        #expect(answer == AppStateAnswer(state).with(products: []))
        // Every member held something to check.
        #expect(answer.verdicts.keys.sorted() == ["com.example.served.coins", "com.example.served.gems"])
        #expect(answer.diagnostics.contains { $0.severity == "warning" && $0.message.contains("colour") })
        #expect((answer.published != nil) == published)
        // Never published: `published` is null, not left out.
        if !published { #expect(String(decoding: bytes, as: UTF8.self).contains(#""published":null"#)) }
        // The products are the feed writer's bytes, unchanged: the real stays `1.0`.
        let products = state.products.map { String(decoding: FeedRenderer.encode($0, for: .snapshot), as: UTF8.self) }
        #expect(products.count == 3)
        #expect(String(decoding: bytes, as: UTF8.self).hasSuffix(#","products":["# + products.joined(separator: ",") + "]}"))
        #expect(products[0].contains(#""weight":1.0"#))
    }

    @Test func editsAreAsDocumented() throws {
        let (workflow, root) = try Self.editorWorkflow(published: false)
        defer { try? FileManager.default.removeItem(at: root) }
        let product = try #require(try workflow.appState("com.example.served").products.first)
        let answer = EditAnswer(product: product, file: "catalog/com.example.served.plist", sourceRevision: Self.sourceRevision)
        let bytes = answer.json
        #expect(Self.problems(try Self.parse(bytes), try Self.schema("/v1/admin/apps/{app}/products/{id}", "put", "200")) == [])
        #expect(try JSONDecoder().decode(EditAnswer.self, from: Data(bytes)) == answer.with(product: []))
        // The feed writer's bytes, unchanged.
        let written = String(decoding: FeedRenderer.encode(product, for: .snapshot), as: UTF8.self)
        #expect(String(decoding: bytes, as: UTF8.self).hasSuffix(#","product":"# + written + "}"))
        #expect(written.contains(#""weight":1.0"#))
    }

    /// The editor API's refusals that carry more than a message: a 422 with the diagnostics, a 412 with
    /// the current state.
    @Test func invalidAndStaleErrorsAreAsDocumented() throws {
        let (workflow, root) = try Self.editorWorkflow(published: true)
        defer { try? FileManager.default.removeItem(at: root) }
        let state = try workflow.appState("com.example.served")
        let invalid = JSONError.body("the change breaks a rule", appending: [("diagnostics", DiagnosticAnswer.json(state.diagnostics))])
        #expect(!state.diagnostics.isEmpty)
        #expect(Self.problems(try Self.parse(invalid), try Self.schema("/v1/admin/apps/{app}/products", "post", "422")) == [])
        let stale = JSONError.body("the app changed", appending: [("current", AppStateAnswer(state).json)])
        #expect(Self.problems(try Self.parse(stale), try Self.schema("/v1/admin/apps/{app}/products", "post", "412")) == [])
    }

    /// The checker reads a map's members and a product's further keys against `additionalProperties`,
    /// and an `enum`: drift there is found too.
    @Test func driftInsideAVerdictOrAProductIsFound() throws {
        let schema = try Self.schema("/v1/admin/apps/{app}", "get", "200")
        let (workflow, root) = try Self.editorWorkflow(published: true)
        defer { try? FileManager.default.removeItem(at: root) }
        let text = String(decoding: AppStateAnswer(try workflow.appState("com.example.served")).json, as: UTF8.self)
        for (from, to, problem) in [
            (#""status":"suspect""#, #""status":"doubtful""#, "$.verdicts.com.example.served.coins.status"),
            (#""reason":"written by hand""#, #""reason":3"#, "$.verdicts.com.example.served.coins.reason: integer is not string"),
            (#""weight":1.0"#, #""weight":null"#, "$.products[0].metadata.weight: null is not"),
            (#""status":"cleared""#, #""status":"sold""#, "$.products[0].status"),
        ] {
            // The first occurrence only: every product has a status.
            let range = try #require(text.range(of: from), "\(from)")
            let drifted = text.replacingCharacters(in: range, with: to)
            let found = Self.problems(try Self.parse(Array(drifted.utf8)), schema)
            #expect(found.count == 1 && found.first?.hasPrefix(problem) == true, "\(found)")
        }
    }
}

extension AppStateAnswer {
    /// The same answer with other products: what the encoder alone holds, for comparing.
    func with(products: [[UInt8]]) -> Self {
        var copy = self
        copy.products = products
        return copy
    }
}

extension EditAnswer {
    /// The same answer with another product.
    func with(product: [UInt8]) -> Self {
        var copy = self
        copy.product = product
        return copy
    }
}
