import Foundation

/// What the purchase endpoints need of an app at one revision, published as `purchases.json` in the
/// revision's records (`public.records/v1/apps/<app>/revisions/<n>/purchases.json`): the app's purchase
/// settings and its ledger catalog (each product's type, entitlements, duration and group). Records
/// reach serving replicas through the store, so every node binds evidence to the same settings
/// without the catalog sources (docs/purchases.md, "Replicas").
///
/// The Xcode certificate the settings name travels as its bytes, read when the revision is published:
/// a path means nothing on another machine. The webhook's secret never does: it stays an operator's
/// file, named here by its path.
public struct PurchaseRecord: Codable, Sendable, Equatable {
    /// The record's name in a revision's records.
    public static let fileName = "purchases.json"
    /// The format this version writes.
    public static let currentFormat = 1

    /// One product, as the ledger and a legacy receipt's entries need it.
    public struct Product: Codable, Sendable, Equatable {
        /// The product identifier.
        public var id: String
        /// Its type, as the catalog writes it (`auto-renewable`, …); nil when the source names none.
        public var type: ProductType?
        /// What a purchase of it unlocks (its `entitlements`, or its own identifier).
        public var entitlements: [String]
        /// A non-renewing subscription's ISO 8601 duration, as written.
        public var duration: String?
        /// A subscription's group.
        public var group: String?
        /// What an Android app buys for it on Google Play: how a Play purchase finds it.
        public var play: PlayProduct? = nil
        /// An auto-renewable product's billing period, written for a product sold on Google Play
        /// only: Google says when a period ends, not when it began (docs/google-play.md).
        public var period: String? = nil
    }

    /// The record's format; a reader refuses one it does not know.
    public var format: Int
    /// The bundle identifier.
    public var app: String
    /// `appAppleId`.
    public var appAppleId: Int64?
    /// The accepted environments.
    public var environments: [PurchaseEnvironment]
    /// `transferPolicy`.
    public var transferPolicy: TransferPolicy
    /// The path of `xcodeCertificate`, as written in the sources.
    public var xcodeCertificatePath: String?
    /// The bytes of that file (DER or PEM), base64; nil when the settings name none or it could not be read.
    public var xcodeCertificate: String?
    /// Why the named certificate is not here (it could not be read when the revision was published).
    public var xcodeCertificateProblem: String?
    /// `webhookURL`.
    public var webhookURL: String?
    /// `webhookSecretFile`: a path on each node that delivers webhooks, never the secret.
    public var webhookSecretFile: String?
    /// `sandboxUnlocks` when it is not the default (true); nil otherwise, so that records of apps
    /// that leave it alone keep their bytes (a changed record is a new revision).
    public var sandboxUnlocks: Bool?
    /// `requireDeviceId` when it is not the default (true); nil otherwise, as `sandboxUnlocks`.
    public var requireDeviceId: Bool?
    /// The App Store Server API's credentials: the key's id and the issuer id, and the key file's
    /// path on each node that calls the API, never the key. Nil when not set.
    public var serverAPI: ServerAPISettings?
    /// How consumption requests are answered; nil: they are not.
    public var consumption: ConsumptionSettings?
    /// Google Play's settings; nil: the app takes no Play evidence.
    public var play: PlaySettings?
    /// Every product of the catalog, in source order.
    public var products: [Product]

    /// The record of `catalog`, reading the Xcode certificate it names with `read` (relative paths
    /// against the working directory, as the server always resolved them).
    public init(_ catalog: AppCatalog, read: (String) -> [UInt8]? = PurchaseRecord.readFile) {
        self.init(settingsOf: catalog, read: read)
        products = catalog.products.map(Product.init)
    }

    /// The bytes of this record with `catalogProducts` as its products, ``encoded`` of
    /// ``init(_:read:)`` without holding a copy of them all (what a build publishes), each written from its
    /// fields in place: copying every product (a score of fields) and its `unlocks` array made this
    /// a tenth of a big build.
    func encoded(listing catalogProducts: [CatalogKit.Product]) -> [UInt8] {
        encode(productCount: catalogProducts.count) { json in
            for index in catalogProducts.indices {
                // `play` is computed: read by index, it would copy the product, whole, to compute it.
                let play = catalogProducts[index].playStorage?.value
                Self.write(
                    &json, id: catalogProducts[index].id, type: catalogProducts[index].type,
                    entitlements: catalogProducts[index].entitlements, duration: catalogProducts[index].duration,
                    group: catalogProducts[index].subscription?.group, play: play,
                    period: play == nil ? nil : catalogProducts[index].subscription?.period)
            }
        }
    }

    /// Reads a file named by the settings, relative paths against the working directory.
    public static func readFile(_ path: String) -> [UInt8]? {
        FileManager.default.contents(atPath: path).map { [UInt8]($0) }
    }

    /// The record of `catalog`'s settings, its products not listed (``encoded(listing:)`` lists them).
    init(settingsOf catalog: AppCatalog, read: (String) -> [UInt8]? = PurchaseRecord.readFile) {
        let settings = catalog.purchaseSettings
        format = Self.currentFormat
        app = catalog.app
        appAppleId = settings.appAppleId
        environments = settings.environments
        transferPolicy = settings.transferPolicy
        xcodeCertificatePath = settings.xcodeCertificate
        if let path = settings.xcodeCertificate {
            if let bytes = read(path) {
                xcodeCertificate = Data(bytes).base64EncodedString()
            } else {
                xcodeCertificateProblem = "\(path) could not be read when the revision was published"
            }
        }
        webhookURL = settings.webhookURL?.absoluteString
        webhookSecretFile = settings.webhookSecretFile
        sandboxUnlocks = settings.sandboxUnlocks ? nil : false
        requireDeviceId = settings.requireDeviceId ? nil : false
        serverAPI = settings.serverAPI
        consumption = settings.consumption
        play = settings.play
        products = []
    }

    /// The record's bytes as published: sorted keys, so that an unchanged record is unchanged bytes.
    ///
    /// Written with ``JSONWriter``, keys in sorted order by hand, byte for byte what `JSONEncoder`
    /// with `[.sortedKeys, .withoutEscapingSlashes]` wrote before (so that records published then
    /// compare equal, and an unchanged catalog stays its revision): `PurchaseRecordEncodingTests`
    /// holds the two equal. `JSONEncoder` took a fifth of a 100,000-product build and a quarter of
    /// its memory (docs/benchmarks.md, "Where the build's time went").
    public var encoded: [UInt8] {
        encode(productCount: products.count) { json in
            for product in products {
                Self.write(
                    &json, id: product.id, type: product.type, entitlements: product.entitlements, duration: product.duration,
                    group: product.group, play: product.play, period: product.period)
            }
        }
    }

    /// The record's bytes, `writeProducts` writing the elements of its `products` array.
    private func encode(productCount: Int, writeProducts: (inout JSONWriter) -> Void) -> [UInt8] {
        var json = JSONWriter(capacity: 256 + productCount * 112)
        json.beginObject()
        json.key("app")
        json.string(app)
        if let appAppleId {
            json.key("appAppleId")
            json.integer(appAppleId)
        }
        if let consumption {
            json.key("consumption")
            json.beginObject()
            if let preference = consumption.refundPreference {
                json.key("refundPreference")
                json.string(preference.rawValue)
            }
            json.key("sampleContentProvided")
            json.boolean(consumption.sampleContentProvided)
            json.endObject()
        }
        json.key("environments")
        json.beginArray()
        for environment in environments { json.string(environment.rawValue) }
        json.endArray()
        json.key("format")
        json.integer(Int64(format))
        if let play {
            json.key("play")
            json.beginObject()
            for (key, value) in [
                ("licenseKey", play.licenseKey), ("packageName", play.packageName), ("pushAudience", play.pushAudience),
                ("pushServiceAccount", play.pushServiceAccount), ("serviceAccountKeyFile", play.serviceAccountKeyFile),
            ] {
                if let value {
                    json.key(key)
                    json.string(value)
                }
            }
            json.endObject()
        }
        json.key("products")
        json.beginArray()
        writeProducts(&json)
        json.endArray()
        if let requireDeviceId { json.key("requireDeviceId"); json.boolean(requireDeviceId) }
        if let sandboxUnlocks { json.key("sandboxUnlocks"); json.boolean(sandboxUnlocks) }
        if let serverAPI {
            json.key("serverAPI")
            json.beginObject()
            json.key("issuerId")
            json.string(serverAPI.issuerId)
            json.key("keyFile")
            json.string(serverAPI.keyFile)
            json.key("keyId")
            json.string(serverAPI.keyId)
            json.endObject()
        }
        json.key("transferPolicy")
        json.string(transferPolicy.rawValue)
        if let webhookSecretFile { json.key("webhookSecretFile"); json.string(webhookSecretFile) }
        if let webhookURL { json.key("webhookURL"); json.string(webhookURL) }
        if let xcodeCertificate { json.key("xcodeCertificate"); json.string(xcodeCertificate) }
        if let xcodeCertificatePath { json.key("xcodeCertificatePath"); json.string(xcodeCertificatePath) }
        if let xcodeCertificateProblem { json.key("xcodeCertificateProblem"); json.string(xcodeCertificateProblem) }
        json.endObject()
        return json.bytes + [UInt8(ascii: "\n")]
    }

    /// One element of `products`, keys sorted; `entitlements` nil: the product's own identifier.
    private static func write(
        _ json: inout JSONWriter, id: String, type: ProductType?, entitlements: [String]?, duration: String?, group: String?,
        play: PlayProduct?, period: String?
    ) {
        json.beginObject()
        if let duration {
            json.key("duration")
            json.string(duration)
        }
        json.key("entitlements")
        json.beginArray()
        if let entitlements {
            for entitlement in entitlements { json.string(entitlement) }
        } else {
            json.string(id)
        }
        json.endArray()
        if let group {
            json.key("group")
            json.string(group)
        }
        json.key("id")
        json.string(id)
        if let period {
            json.key("period")
            json.string(period)
        }
        if let play {
            json.key("play")
            json.beginObject()
            for (key, value) in [
                ("basePlan", play.basePlan), ("offer", play.offer), ("productId", play.productId), ("purchaseOption", play.purchaseOption),
            ] {
                if let value {
                    json.key(key)
                    json.string(value)
                }
            }
            json.endObject()
        }
        if let type {
            json.key("type")
            json.string(type.rawValue)
        }
        json.endObject()
    }

    /// The catalog products each Play product id is sold as (a subscription's base plans share
    /// one), in source order: what an Android app's reports, which name Play's ids, are counted by.
    public var playProductIds: [String: [String]] {
        var ids: [String: [String]] = [:]
        for product in products {
            if let play = product.play { ids[play.productId, default: []].append(product.id) }
        }
        return ids
    }

    /// A published record; nil when `bytes` is not one of a format this version reads.
    public static func decode(_ bytes: [UInt8]) -> PurchaseRecord? {
        guard let record = try? JSONDecoder().decode(PurchaseRecord.self, from: Data(bytes)), record.format == currentFormat else {
            return nil
        }
        return record
    }
}

extension PublicTree {
    /// A revision's purchase record, `v1/apps/<app>/revisions/<n>/purchases.json` in the records tree.
    public func purchaseRecordURL(_ app: String, _ revision: Int) -> URL {
        recordsDirectory(app, revision).appendingPathComponent(PurchaseRecord.fileName)
    }

    /// The bytes of a revision's purchase record; nil when the revision has none (published before
    /// records carried one).
    public func purchaseRecordBytes(_ app: String, revision: Int) -> [UInt8]? {
        FileManager.default.contents(atPath: purchaseRecordURL(app, revision).path).map { [UInt8]($0) }
    }
}

extension PurchaseRecord.Product {
    /// What the record says of `product`.
    init(_ product: CatalogKit.Product) {
        self.init(
            id: product.id, type: product.type, entitlements: product.unlocks, duration: product.duration,
            group: product.subscription?.group, play: product.play,
            period: product.play == nil ? nil : product.subscription?.period)
    }
}
