import CatalogKit
import Foundation
import Ledger
import X509

/// What one app's settings make of the evidence it is sent: its verifier, its ledger catalog, its
/// products' types (a legacy receipt names none) and its transfer policy. The server and
/// `catalog purchases rebuild` make it alike.
public struct AppPurchases: Sendable {
    /// Bound to the app's bundle id, Apple id, environments and Xcode certificate.
    public let verifier: SignedDataVerifier
    /// What each product unlocks, and a non-renewing one's duration.
    public let catalog: LedgerCatalog
    /// Each product's type, Apple's name for it.
    public let productTypes: [String: PurchaseKind]
    /// What happens to a purchase presented by another customer.
    public let transferPolicy: PurchaseTransferPolicy
    /// Where webhooks of entitlement changes go (`webhookURL`); nil: none are sent.
    public let webhookURL: URL?
    /// The file holding the webhook's HMAC secret (`webhookSecretFile`), as written.
    public let webhookSecretFile: String?
    /// Whether a legacy receipt must come with its device identifier (`requireDeviceId`).
    public let requiresDeviceId: Bool
    /// The App Store Server API's credentials (`serverAPIKeyId`, `serverAPIIssuerId`,
    /// `serverAPIKeyFile`); nil: the API is never called for this app.
    public let serverAPI: ServerAPISettings?
    /// How consumption requests are answered; nil: they are not.
    public let consumption: ConsumptionSettings?
    /// The app's bundle id.
    public let bundleId: String
    /// Each auto-renewable product's subscription group in the catalog, by product id (a period's
    /// group as the App Store names it is a number; content names the catalog's group).
    public let subscriptionGroups: [String: String]

    /// The settings of the validated `catalog`, trusting `trust`'s roots: what its published
    /// record would say (`catalog customers show`, `catalog purchases rebuild`).
    public init(_ catalog: AppCatalog, trust: PurchaseTrust) throws(PurchaseConfigurationError) {
        try self.init(PurchaseRecord(catalog), trust: trust)
    }

    /// The settings a revision's purchase record holds, trusting `trust`'s roots; fails when the
    /// Xcode certificate it names did not travel with it or is not one certificate.
    public init(_ record: PurchaseRecord, trust: PurchaseTrust) throws(PurchaseConfigurationError) {
        var xcode: Certificate?
        if let path = record.xcodeCertificatePath {
            guard let base64 = record.xcodeCertificate, let bytes = Data(base64Encoded: base64) else {
                throw PurchaseConfigurationError(
                    record.xcodeCertificateProblem ?? "the Xcode certificate \(path) is not in the published record")
            }
            let certificates = try PurchaseTrust.certificates(fromBytes: [UInt8](bytes), named: path)
            guard certificates.count == 1 else { throw PurchaseConfigurationError("\(path) must hold exactly one certificate") }
            xcode = certificates.first
        }
        let environments = Set(
            record.environments.map { environment -> LedgerEnvironment in
                switch environment {
                case .production: .production
                case .sandbox: .sandbox
                case .xcode: .xcode
                }
            })
        verifier = SignedDataVerifier(
            trust: trust,
            app: AppStoreApp(bundleId: record.app, appAppleId: record.appAppleId, environments: environments, xcodeCertificate: xcode))
        var products: [String: LedgerProduct] = [:]
        var types: [String: PurchaseKind] = [:]
        var groups: [String: String] = [:]
        for product in record.products {
            groups[product.id] = product.group
            products[product.id] = LedgerProduct(entitlements: product.entitlements, duration: product.duration.flatMap(ISO8601Period.init))
            switch product.type {
            case .consumable?: types[product.id] = .consumable
            case .nonConsumable?: types[product.id] = .nonConsumable
            case .autoRenewable?: types[product.id] = .autoRenewableSubscription
            case .nonRenewing?: types[product.id] = .nonRenewingSubscription
            case nil: break
            }
        }
        self.catalog = LedgerCatalog(products: products, sandboxUnlocks: record.sandboxUnlocks ?? true)
        requiresDeviceId = record.requireDeviceId ?? true
        productTypes = types
        transferPolicy = record.transferPolicy == .transfer ? .transfer : .keep
        webhookURL = record.webhookURL.flatMap { URL(string: $0) }
        webhookSecretFile = record.webhookSecretFile
        serverAPI = record.serverAPI
        consumption = record.consumption
        bundleId = record.app
        subscriptionGroups = groups
    }
}
