import Foundation

/// What the customer owns, as the server last answered it: the entitlements its ledger grants
/// and the consumables it credited, with the moment the answer was read.
///
/// The server derives it from the App Store's signed evidence (docs/purchases.md), so it is
/// what the app should unlock. Kept on disk, it still answers when the app is offline; ``readAt``
/// says how old it is, and the app decides how old is too old (see <doc:VerifyPurchases>).
public struct CustomerEntitlements: Sendable, Hashable {
    /// Where this answer came from.
    public enum Source: Sendable, Hashable {
        /// The server answered just now.
        case network
        /// The answer kept on disk from an earlier read: the server could not be asked, or there
        /// was nothing to ask it with. ``CustomerEntitlements/error`` says why, when something failed.
        case cache
        /// Nothing is known yet: no purchase was ever accepted on this install. No entitlements.
        case unknown
    }

    /// One entitlement the customer holds.
    public struct Entitlement: Sendable, Hashable {
        /// The entitlement's name, as the catalog's `entitlements` list it (by default a product id).
        public var name: String
        /// `Production`, `Sandbox` or `Xcode`: each environment is a ledger of its own.
        public var environment: String
        /// The product that grants it.
        public var productId: String
        /// The transaction that grants it.
        public var transactionId: String
        /// When it ends, for a subscription; nil for a purchase that does not expire.
        public var expiresDate: Date?
        /// Whether access continues only thanks to a billing grace period.
        public var inGracePeriod: Bool

        /// An entitlement as the server names it.
        public init(
            name: String, environment: String, productId: String, transactionId: String, expiresDate: Date?, inGracePeriod: Bool
        ) {
            self.name = name
            self.environment = environment
            self.productId = productId
            self.transactionId = transactionId
            self.expiresDate = expiresDate
            self.inGracePeriod = inGracePeriod
        }
    }

    /// Consumables bought and not refunded: the quantity of one product in one environment.
    public struct Credit: Sendable, Hashable {
        /// The consumable product.
        public var productId: String
        /// `Production`, `Sandbox` or `Xcode`.
        public var environment: String
        /// Units bought, each transaction counted once.
        public var quantity: Int
    }

    /// One of the names the server knows the customer by.
    public struct Key: Sendable, Hashable {
        /// `appAccountToken`, `appTransactionId` or `originalTransactionId`.
        public var kind: String
        /// The key's value.
        public var value: String
    }

    /// The server's number for the customer; nil when nothing is known.
    public var customer: Int?
    /// The names the server knows the customer by.
    public var keys: [Key]
    /// What the customer holds at ``serverTime``.
    public var entitlements: [Entitlement]
    /// The consumables credited at ``serverTime``.
    public var credits: [Credit]
    /// The instant the server computed the answer for, by the server's clock.
    public var serverTime: Date?
    /// When this client received the answer, by the device's clock; nil when nothing is known.
    public var readAt: Date?
    /// Whether the answer is new, kept, or there is none.
    public var source: Source
    /// Why the server's answer is not new, when asking it failed or it refused the evidence.
    public var error: CatalogClientError?

    /// No entitlements, nothing known.
    static let unknown = CustomerEntitlements(
        customer: nil, keys: [], entitlements: [], credits: [], serverTime: nil, readAt: nil, source: .unknown, error: nil)

    /// Seconds since the answer was read, by the device's clock; nil when nothing is known.
    public func age(at now: Date = Date()) -> TimeInterval? {
        readAt.map { now.timeIntervalSince($0) }
    }

    /// Whether the answer grants `name` at `now`: some entitlement of that name that does not
    /// expire, or expires after `now`. An entitlement that expired since the answer was read is
    /// not granted; one revoked since cannot be known offline, which is what ``age(at:)`` is for.
    ///
    /// - Parameters:
    ///   - name: The entitlement, as the catalog names it.
    ///   - now: The instant to judge at; the device's clock by default.
    ///   - environments: The environments that count; all by default. A production build that
    ///     must not unlock anything for sandbox purchases passes `["Production"]`.
    public func grants(_ name: String, at now: Date = Date(), environments: Set<String>? = nil) -> Bool {
        entitlements.contains { entitlement in
            entitlement.name == name && (environments?.contains(entitlement.environment) ?? true)
                && (entitlement.expiresDate.map { $0 > now } ?? true)
        }
    }
}

/// The JSON `POST …/purchases` answers (docs/purchases.md, "Reading a customer", without purchases,
/// periods and transfers); kept as the client read it (``KeptCustomers``).
struct WireCustomer: Codable, Sendable {
    struct Grant: Codable, Sendable {
        var entitlement: String
        var environment: String
        var productId: String
        var transactionId: String
        var expiresDate: String?
        var inGracePeriod: Bool?
    }
    struct Credit: Codable, Sendable {
        var productId: String
        var environment: String
        var quantity: Int
    }
    struct Key: Codable, Sendable {
        var kind: String
        var value: String
    }
    var customer: Int
    var at: String?
    var keys: [Key]?
    var entitlements: [Grant]
    var credits: [Credit]?

    /// Whether every date in it is RFC 3339: an answer that is not is never kept.
    var isReadable: Bool { entitlements(readAt: Date(), source: .network) != nil }

    /// The answer as the app sees it, read at `readAt`; nil when a date in it is not RFC 3339.
    func entitlements(readAt: Date, source: CustomerEntitlements.Source) -> CustomerEntitlements? {
        var grants: [CustomerEntitlements.Entitlement] = []
        for grant in entitlements {
            var expires: Date?
            if let text = grant.expiresDate {
                guard let parsed = Self.instant(text) else { return nil }
                expires = parsed
            }
            grants.append(
                .init(
                    name: grant.entitlement, environment: grant.environment, productId: grant.productId,
                    transactionId: grant.transactionId, expiresDate: expires, inGracePeriod: grant.inGracePeriod ?? false))
        }
        return CustomerEntitlements(
            customer: customer, keys: (keys ?? []).map { .init(kind: $0.kind, value: $0.value) }, entitlements: grants,
            credits: (credits ?? []).map { .init(productId: $0.productId, environment: $0.environment, quantity: $0.quantity) },
            serverTime: at.flatMap(Self.instant), readAt: readAt, source: source, error: nil)
    }

    /// An RFC 3339 instant, with or without fractional seconds.
    static func instant(_ text: String) -> Date? {
        let fractional = ISO8601DateFormatter()
        fractional.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        let plain = ISO8601DateFormatter()
        plain.formatOptions = [.withInternetDateTime]
        return fractional.date(from: text) ?? plain.date(from: text)
    }
}
