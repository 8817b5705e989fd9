/// The bodies of the App Store Server API's calls this server makes, with Apple's field names
/// (docs/app-store-api.md). Signed fields stay strings here: everything Apple signs goes through
/// the same verifier as evidence that arrives by itself, never trusted because it came over TLS.
/// Dates are milliseconds since 1970, as Apple writes them.

/// `Get Notification History`'s request: the same body on every page of one window.
public struct NotificationHistoryRequest: Codable, Sendable, Hashable {
    /// The window's start, inclusive; Apple keeps 180 days.
    public var startDate: Int64
    /// The window's end, exclusive.
    public var endDate: Int64
    /// Only notifications of this type.
    public var notificationType: String?
    /// Only notifications of this subtype.
    public var notificationSubtype: String?
    /// Only notifications whose delivery failed.
    public var onlyFailures: Bool?
    /// Only notifications of the customer who made this transaction.
    public var transactionId: String?

    /// A window, in milliseconds since 1970.
    public init(startDate: Int64, endDate: Int64, onlyFailures: Bool? = nil) {
        self.startDate = startDate
        self.endDate = endDate
        self.onlyFailures = onlyFailures
    }
}

/// `Get Notification History`'s answer: one page.
public struct NotificationHistoryResponse: Codable, Sendable, Hashable {
    /// The page's notifications, oldest first.
    public var notificationHistory: [NotificationHistoryItem]?
    /// Whether another page follows.
    public var hasMore: Bool?
    /// The token that asks for the next page.
    public var paginationToken: String?

    /// A value with these fields.
    public init(notificationHistory: [NotificationHistoryItem]?, hasMore: Bool?, paginationToken: String?) {
        self.notificationHistory = notificationHistory
        self.hasMore = hasMore
        self.paginationToken = paginationToken
    }
}

/// One notification Apple sent (or tried to).
public struct NotificationHistoryItem: Codable, Sendable, Hashable {
    /// The notification as Apple signed it: what a POST to the notification URL carries.
    public var signedPayload: String?
    /// Apple's attempts to deliver it: the first and up to five retries.
    public var sendAttempts: [SendAttempt]?

    /// A value with these fields.
    public init(signedPayload: String?, sendAttempts: [SendAttempt]? = nil) {
        self.signedPayload = signedPayload
        self.sendAttempts = sendAttempts
    }
}

/// One attempt of Apple's to deliver a notification.
public struct SendAttempt: Codable, Sendable, Hashable {
    /// When.
    public var attemptDate: Int64?
    /// `SUCCESS`, `TIMED_OUT`, `NO_RESPONSE`, `UNSUCCESSFUL_HTTP_RESPONSE_CODE`, ...
    public var sendAttemptResult: String?

    /// A value with these fields.
    public init(attemptDate: Int64?, sendAttemptResult: String?) {
        self.attemptDate = attemptDate
        self.sendAttemptResult = sendAttemptResult
    }
}

/// `Get Transaction History` (v2)'s answer: one page of a customer's transactions.
public struct TransactionHistoryResponse: Codable, Sendable, Hashable {
    /// The token that asks for the next page.
    public var revision: String?
    /// Whether another page follows.
    public var hasMore: Bool?
    /// The app's bundle id, as Apple names it.
    public var bundleId: String?
    /// The app's Apple id.
    public var appAppleId: Int64?
    /// `Production` or `Sandbox`.
    public var environment: String?
    /// The page's transactions, each a JWS.
    public var signedTransactions: [String]?

    /// A value with these fields.
    public init(
        revision: String?, hasMore: Bool?, bundleId: String?, appAppleId: Int64?, environment: String?, signedTransactions: [String]?
    ) {
        self.revision = revision
        self.hasMore = hasMore
        self.bundleId = bundleId
        self.appAppleId = appAppleId
        self.environment = environment
        self.signedTransactions = signedTransactions
    }
}

/// `Get All Subscription Statuses`'s answer.
public struct StatusResponse: Codable, Sendable, Hashable {
    /// `Production` or `Sandbox`.
    public var environment: String?
    /// The app's bundle id, as Apple names it.
    public var bundleId: String?
    /// The app's Apple id.
    public var appAppleId: Int64?
    /// One entry per subscription group.
    public var data: [SubscriptionGroupStatus]?

    /// A value with these fields.
    public init(environment: String?, bundleId: String?, appAppleId: Int64?, data: [SubscriptionGroupStatus]?) {
        self.environment = environment
        self.bundleId = bundleId
        self.appAppleId = appAppleId
        self.data = data
    }
}

/// A subscription group's last transactions.
public struct SubscriptionGroupStatus: Codable, Sendable, Hashable {
    /// The subscription group, as Apple numbers it.
    public var subscriptionGroupIdentifier: String?
    /// The group's subscriptions, each with its latest transaction and renewal info.
    public var lastTransactions: [LastTransaction]?

    /// A value with these fields.
    public init(subscriptionGroupIdentifier: String?, lastTransactions: [LastTransaction]?) {
        self.subscriptionGroupIdentifier = subscriptionGroupIdentifier
        self.lastTransactions = lastTransactions
    }
}

/// One subscription's state in Apple's view.
public struct LastTransaction: Codable, Sendable, Hashable {
    /// 1 active, 2 expired, 3 billing retry, 4 grace period, 5 revoked.
    public var status: Int?
    /// The subscription's original transaction id.
    public var originalTransactionId: String?
    /// The latest transaction, a JWS.
    public var signedTransactionInfo: String?
    /// The renewal info, a JWS.
    public var signedRenewalInfo: String?

    /// A value with these fields.
    public init(status: Int?, originalTransactionId: String?, signedTransactionInfo: String?, signedRenewalInfo: String?) {
        self.status = status
        self.originalTransactionId = originalTransactionId
        self.signedTransactionInfo = signedTransactionInfo
        self.signedRenewalInfo = signedRenewalInfo
    }

    /// Apple's name for ``status``.
    public var statusName: String {
        switch status {
        case 1: "active"
        case 2: "expired"
        case 3: "billing retry"
        case 4: "grace period"
        case 5: "revoked"
        case let other?: "status \(other)"
        case nil: "no status"
        }
    }
}

/// `Request a Test Notification`'s answer.
public struct SendTestNotificationResponse: Codable, Sendable, Hashable {
    /// What `Get Test Notification Status` asks about.
    public var testNotificationToken: String?

    /// A value with these fields.
    public init(testNotificationToken: String?) { self.testNotificationToken = testNotificationToken }
}

/// `Get Test Notification Status`'s answer.
public struct CheckTestNotificationResponse: Codable, Sendable, Hashable {
    /// The test notification, a JWS.
    public var signedPayload: String?
    /// Apple's attempts to deliver it.
    public var sendAttempts: [SendAttempt]?

    /// A value with these fields.
    public init(signedPayload: String?, sendAttempts: [SendAttempt]?) {
        self.signedPayload = signedPayload
        self.sendAttempts = sendAttempts
    }
}

/// `Send Consumption Information`'s body (Apple's `ConsumptionRequest`, the current version).
public struct ConsumptionRequest: Codable, Sendable, Hashable {
    /// Always true: an answer is sent only when the customer consented (Apple asks for none otherwise).
    public var customerConsented: Bool
    /// Whether the app lets customers try its content first.
    public var sampleContentProvided: Bool
    /// `DELIVERED`, `UNDELIVERED_QUALITY_ISSUE`, `UNDELIVERED_WRONG_ITEM`, `UNDELIVERED_SERVER_OUTAGE`, `UNDELIVERED_OTHER`.
    public var deliveryStatus: String
    /// How much was consumed, in thousandths of a percent (0 to 100000); never for auto-renewable subscriptions.
    public var consumptionPercentage: Int?
    /// `DECLINE`, `GRANT_FULL` or `GRANT_PRORATED`.
    public var refundPreference: String?

    /// A value with these fields.
    public init(
        customerConsented: Bool, sampleContentProvided: Bool, deliveryStatus: String, consumptionPercentage: Int? = nil,
        refundPreference: String? = nil
    ) {
        self.customerConsented = customerConsented
        self.sampleContentProvided = sampleContentProvided
        self.deliveryStatus = deliveryStatus
        self.consumptionPercentage = consumptionPercentage
        self.refundPreference = refundPreference
    }
}

/// Apple's error body.
struct ErrorBody: Decodable {
    var errorCode: Int?
    var errorMessage: String?
}
