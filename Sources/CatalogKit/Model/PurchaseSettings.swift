import Foundation

/// The environments the App Store signs evidence in, as an app's `environments` setting names them.
public enum PurchaseEnvironment: String, CaseIterable, Sendable, Hashable, Codable {
    /// Real purchases.
    case production
    /// The App Store sandbox: App Review, TestFlight and sandbox accounts.
    case sandbox
    /// StoreKit testing in Xcode; accepted only with `xcodeCertificate` set.
    case xcode

    static let expectedList = "production, sandbox or xcode"
}

/// What happens when a purchase already bound to one customer is presented by another.
public enum TransferPolicy: String, CaseIterable, Sendable, Hashable, Codable {
    /// The purchase moves to the customer who presented it last.
    case transfer
    /// The purchase stays with its first customer; the other is refused.
    case keep

    static let expectedList = "transfer or keep"
}

/// The credentials an app names for the App Store Server API (docs/app-store-api.md): the key's
/// id, the team's issuer id, and the path of the key's file, never the key.
public struct ServerAPISettings: Sendable, Hashable, Codable {
    /// `serverAPIKeyId`.
    public var keyId: String
    /// `serverAPIIssuerId`.
    public var issuerId: String
    /// `serverAPIKeyFile`, as written (relative paths against the server's working directory).
    public var keyFile: String

    /// Settings.
    public init(keyId: String, issuerId: String, keyFile: String) {
        self.keyId = keyId
        self.issuerId = issuerId
        self.keyFile = keyFile
    }
}

/// What an app decides of its answers to Apple's consumption requests (docs/app-store-api.md,
/// "Consumption requests"): the rest of each answer comes from the ledger.
public struct ConsumptionSettings: Sendable, Hashable, Codable {
    /// The app's preference on a refund, as Apple names it.
    public enum RefundPreference: String, Sendable, Hashable, Codable, CaseIterable {
        /// The developer prefers Apple to decline the refund.
        case decline
        /// The developer prefers Apple to grant the whole refund.
        case grantFull
        /// The developer prefers Apple to refund what was not used.
        case grantProrated

        /// Apple's value (`DECLINE`, `GRANT_FULL`, `GRANT_PRORATED`).
        public var apple: String {
            switch self {
            case .decline: "DECLINE"
            case .grantFull: "GRANT_FULL"
            case .grantProrated: "GRANT_PRORATED"
            }
        }

        static let expectedList = "decline, grantFull or grantProrated"
    }

    /// `sampleContentProvided`.
    public var sampleContentProvided: Bool
    /// `refundPreference`; nil: none said.
    public var refundPreference: RefundPreference?

    /// Settings.
    public init(sampleContentProvided: Bool = false, refundPreference: RefundPreference? = nil) {
        self.sampleContentProvided = sampleContentProvided
        self.refundPreference = refundPreference
    }
}

/// What an app sets for Google Play (docs/google-play.md): its package, the licence key that signs
/// its purchases, and who pushes its notifications.
public struct PlaySettings: Sendable, Hashable, Codable {
    /// `playPackageName`: what every purchase of the app names.
    public var packageName: String
    /// `playLicenseKey`: base64 of the licence key's SubjectPublicKeyInfo, as Play Console shows it;
    /// nil: purchases cannot be verified offline.
    public var licenseKey: String?
    /// `playPushAudience`: the `aud` of the push subscription's tokens; nil: no notifications.
    public var pushAudience: String?
    /// `playPushServiceAccount`: the `email` of the push subscription's tokens.
    public var pushServiceAccount: String?
    /// `playServiceAccountKeyFile`: the path, on each node that calls the Play Developer API, of the
    /// service account's JSON key file, never the key; nil: the API is not called for this app.
    public var serviceAccountKeyFile: String?

    /// Settings.
    public init(
        packageName: String, licenseKey: String? = nil, pushAudience: String? = nil, pushServiceAccount: String? = nil,
        serviceAccountKeyFile: String? = nil
    ) {
        self.packageName = packageName
        self.licenseKey = licenseKey
        self.pushAudience = pushAudience
        self.pushServiceAccount = pushServiceAccount
        self.serviceAccountKeyFile = serviceAccountKeyFile
    }
}

/// An app's settings for the App Store's evidence: what it is bound to, and who owns a purchase.
public struct PurchaseSettings: Sendable, Hashable {
    /// The app's Apple id (`appAppleId`), which production evidence must name; nil when not set.
    public var appAppleId: Int64?
    /// The environments whose evidence is accepted; production and sandbox by default, because App
    /// Review and TestFlight buy in the sandbox against the production server.
    public var environments: [PurchaseEnvironment]
    /// Whether a purchase follows the customer who presents it last, or stays with the first.
    public var transferPolicy: TransferPolicy
    /// The path of the certificate exported from Xcode that signs StoreKit testing evidence, as
    /// written (relative paths are resolved by the server against its working directory).
    public var xcodeCertificate: String?
    /// Where webhooks of entitlement changes are posted (`webhookURL`); nil: none are sent.
    public var webhookURL: URL?
    /// The path of the file holding the webhook's HMAC secret (`webhookSecretFile`), as written.
    public var webhookSecretFile: String?
    /// The App Store Server API's credentials (`serverAPIKeyId`, `serverAPIIssuerId`,
    /// `serverAPIKeyFile`): all three or none; nil: the server never calls the API for this app.
    public var serverAPI: ServerAPISettings?
    /// How Apple's consumption requests are answered (`answerConsumptionRequests`,
    /// `sampleContentProvided`, `refundPreference`); nil: they are recorded and not answered.
    public var consumption: ConsumptionSettings?
    /// Whether sandbox (and Xcode) evidence unlocks entitlements, credits and content
    /// (`sandboxUnlocks`); true by default, because App Review buys in the sandbox against the
    /// production server and must be able to use what it bought. False keeps such evidence in the
    /// ledger and lets it unlock nothing (a TestFlight build with a public link).
    public var sandboxUnlocks: Bool = true
    /// Whether a legacy receipt must come with the device identifier whose hash it carries
    /// (`requireDeviceId`); true by default, so that a copied receipt is useless without its device.
    public var requireDeviceId: Bool = true
    /// Google Play's settings (`playPackageName` and the others); nil: the app takes no Play evidence.
    public var play: PlaySettings?

    /// The defaults: no Apple id, production and sandbox, `keep`, no Xcode certificate.
    public init(
        appAppleId: Int64? = nil, environments: [PurchaseEnvironment] = [.production, .sandbox], transferPolicy: TransferPolicy = .keep,
        xcodeCertificate: String? = nil
    ) {
        self.appAppleId = appAppleId
        self.environments = environments
        self.transferPolicy = transferPolicy
        self.xcodeCertificate = xcodeCertificate
    }
}
