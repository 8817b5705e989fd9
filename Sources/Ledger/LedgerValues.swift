import Foundation

// The ledger's values, shared by every store. Each is open: a RawRepresentable with the known values
// as constants, so that a value a store adds tomorrow decodes and is kept rather than failing a whole
// payload. They are spelt as the App Store spells them, because the answers (docs/purchases.md,
// "Reading a customer") use Apple's names for every store; another store's adapter maps its own
// values onto these.

/// Which store a purchase was made in.
public struct Marketplace: RawRepresentable, Codable, Sendable, Hashable, CustomStringConvertible {
    /// The stored name.
    public var rawValue: String
    /// Makes a value from its stored name.
    public init(rawValue: String) { self.rawValue = rawValue }
    /// Apple's App Store.
    public static let appStore = Self(rawValue: "appStore")
    /// Google Play.
    public static let googlePlay = Self(rawValue: "googlePlay")
    /// The stored name.
    public var description: String { rawValue }
}

/// The environment evidence was made in.
public struct LedgerEnvironment: RawRepresentable, Codable, Sendable, Hashable, CustomStringConvertible {
    /// Apple's spelling.
    public var rawValue: String
    /// Makes a value from Apple's spelling.
    public init(rawValue: String) { self.rawValue = rawValue }
    /// Real purchases.
    public static let production = Self(rawValue: "Production")
    /// The store's test purchases: Apple's sandbox (App Review, TestFlight, sandbox accounts).
    public static let sandbox = Self(rawValue: "Sandbox")
    /// StoreKit testing in Xcode, signed by a certificate the developer's Xcode made.
    public static let xcode = Self(rawValue: "Xcode")
    /// StoreKit local testing (Apple's `LocalTesting`).
    public static let localTesting = Self(rawValue: "LocalTesting")
    /// Apple's spelling.
    public var description: String { rawValue }
}

/// What kind of product a purchase is of.
public struct PurchaseKind: RawRepresentable, Codable, Sendable, Hashable {
    /// Apple's spelling.
    public var rawValue: String
    /// Makes a value from Apple's spelling.
    public init(rawValue: String) { self.rawValue = rawValue }
    /// An auto-renewable subscription.
    public static let autoRenewableSubscription = Self(rawValue: "Auto-Renewable Subscription")
    /// A non-consumable.
    public static let nonConsumable = Self(rawValue: "Non-Consumable")
    /// A consumable.
    public static let consumable = Self(rawValue: "Consumable")
    /// A non-renewing subscription.
    public static let nonRenewingSubscription = Self(rawValue: "Non-Renewing Subscription")
}

/// Bought by the account, or shared with it (Family Sharing).
public struct Ownership: RawRepresentable, Codable, Sendable, Hashable {
    /// Apple's spelling.
    public var rawValue: String
    /// Makes a value from Apple's spelling.
    public init(rawValue: String) { self.rawValue = rawValue }
    /// Shared by a family member.
    public static let familyShared = Self(rawValue: "FAMILY_SHARED")
    /// Bought by this account.
    public static let purchased = Self(rawValue: "PURCHASED")
}

/// The kind of offer a period was bought with (a number on the wire).
public struct OfferType: RawRepresentable, Codable, Sendable, Hashable {
    /// Apple's number.
    public var rawValue: Int
    /// Makes a value from Apple's number.
    public init(rawValue: Int) { self.rawValue = rawValue }
    /// An introductory offer.
    public static let introductoryOffer = Self(rawValue: 1)
    /// A promotional offer.
    public static let promotionalOffer = Self(rawValue: 2)
    /// An offer code.
    public static let offerCode = Self(rawValue: 3)
    /// A win-back offer.
    public static let winBackOffer = Self(rawValue: 4)
}

/// How an offer discounts.
public struct OfferDiscountType: RawRepresentable, Codable, Sendable, Hashable {
    /// Apple's spelling.
    public var rawValue: String
    /// Makes a value from Apple's spelling.
    public init(rawValue: String) { self.rawValue = rawValue }
    /// A free trial.
    public static let freeTrial = Self(rawValue: "FREE_TRIAL")
    /// Pay as you go.
    public static let payAsYouGo = Self(rawValue: "PAY_AS_YOU_GO")
    /// Pay up front.
    public static let payUpFront = Self(rawValue: "PAY_UP_FRONT")
    /// A one-time discount.
    public static let oneTime = Self(rawValue: "ONE_TIME")
}

/// Why a purchase was refunded or revoked (a number on the wire).
public struct RevocationReason: RawRepresentable, Codable, Sendable, Hashable {
    /// Apple's number.
    public var rawValue: Int
    /// Makes a value from Apple's number.
    public init(rawValue: Int) { self.rawValue = rawValue }
    /// Refunded for another reason (e.g. an accidental purchase).
    public static let other = Self(rawValue: 0)
    /// Refunded because of an issue in the app.
    public static let appIssue = Self(rawValue: 1)
}
