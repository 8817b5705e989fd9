/// A call to the App Store Server API that did not succeed, with Apple's error code and its name
/// where Apple sent one (docs/app-store-api.md, "Errors").
public struct AppStoreAPIError: Error, CustomStringConvertible, Sendable, Hashable {
    /// What went wrong, as far as retrying is concerned.
    public enum Kind: String, Sendable, Hashable {
        /// 401: Apple refused the token (a wrong key, key id, issuer id or bundle id, or a clock far off).
        case unauthorized
        /// 429 after every retry: the rate limit.
        case throttled
        /// 5xx after every retry.
        case unavailable
        /// Another 4xx: the request itself is wrong (or names a transaction Apple does not know).
        case refused
        /// No answer: the connection failed or the call ran past its deadline, after every retry.
        case unreachable
        /// An answer this client cannot read.
        case malformed
        /// The credentials could not make a token.
        case credentials
    }

    /// The kind.
    public var kind: Kind
    /// The HTTP status, when an answer came.
    public var status: Int?
    /// Apple's `errorCode`, when the body had one.
    public var code: Int?
    /// Apple's `errorMessage`, when the body had one.
    public var message: String?
    /// The API's operation (`notificationHistory`, ...).
    public var operation: String

    /// An error.
    public init(_ kind: Kind, operation: String, status: Int? = nil, code: Int? = nil, message: String? = nil) {
        self.kind = kind
        self.operation = operation
        self.status = status
        self.code = code
        self.message = message
    }

    /// Apple's name for ``code`` (`TRANSACTION_ID_NOT_FOUND`), nil for a code this version does not know.
    public var name: String? { code.flatMap { Self.names[$0] } }

    public var description: String {
        var text = "\(operation): "
        switch kind {
        case .unauthorized: text += "Apple refused the API key (401): check the key id, issuer id, bundle id, key file and the clock"
        case .throttled: text += "rate limit exceeded (429), retries exhausted"
        case .unavailable: text += "App Store Server API unavailable (\(status.map(String.init) ?? "5xx")), retries exhausted"
        case .refused: text += "refused (\(status.map(String.init) ?? "4xx"))"
        case .unreachable: text += "no answer from the App Store Server API"
        case .malformed: text += "an answer that could not be read"
        case .credentials: text += "cannot make the API token"
        }
        if let code { text += ", error \(code)" + (name.map { " \($0)" } ?? "") }
        if let message, !message.isEmpty { text += ": \(message)" }
        return text
    }

    /// Apple's error codes by their names in Apple's app-store-server-library (`APIError`), and the
    /// two Apple documents that the library does not name (4000044, 4000209) by their documented errors.
    static let names: [Int: String] = [
        4_000_000: "GENERAL_BAD_REQUEST",
        4_000_002: "INVALID_APP_IDENTIFIER",
        4_000_005: "INVALID_REQUEST_REVISION",
        4_000_006: "INVALID_TRANSACTION_ID",
        4_000_008: "INVALID_ORIGINAL_TRANSACTION_ID",
        4_000_009: "INVALID_EXTEND_BY_DAYS",
        4_000_010: "INVALID_EXTEND_REASON_CODE",
        4_000_011: "INVALID_REQUEST_IDENTIFIER",
        4_000_012: "START_DATE_TOO_FAR_IN_PAST",
        4_000_013: "START_DATE_AFTER_END_DATE",
        4_000_014: "INVALID_PAGINATION_TOKEN",
        4_000_015: "INVALID_START_DATE",
        4_000_016: "INVALID_END_DATE",
        4_000_017: "PAGINATION_TOKEN_EXPIRED",
        4_000_018: "INVALID_NOTIFICATION_TYPE",
        4_000_019: "MULTIPLE_FILTERS_SUPPLIED",
        4_000_020: "INVALID_TEST_NOTIFICATION_TOKEN",
        4_000_021: "INVALID_SORT",
        4_000_022: "INVALID_PRODUCT_TYPE",
        4_000_023: "INVALID_PRODUCT_ID",
        4_000_024: "INVALID_SUBSCRIPTION_GROUP_IDENTIFIER",
        4_000_025: "INVALID_EXCLUDE_REVOKED",
        4_000_026: "INVALID_IN_APP_OWNERSHIP_TYPE",
        4_000_027: "INVALID_EMPTY_STOREFRONT_COUNTRY_CODE_LIST",
        4_000_028: "INVALID_STOREFRONT_COUNTRY_CODE",
        4_000_030: "INVALID_REVOKED",
        4_000_031: "INVALID_STATUS",
        4_000_032: "INVALID_ACCOUNT_TENURE",
        4_000_033: "INVALID_APP_ACCOUNT_TOKEN",
        4_000_034: "INVALID_CONSUMPTION_STATUS",
        4_000_035: "INVALID_CUSTOMER_CONSENTED",
        4_000_036: "INVALID_DELIVERY_STATUS",
        4_000_037: "INVALID_LIFETIME_DOLLARS_PURCHASED",
        4_000_038: "INVALID_LIFETIME_DOLLARS_REFUNDED",
        4_000_039: "INVALID_PLATFORM",
        4_000_040: "INVALID_PLAY_TIME",
        4_000_041: "INVALID_SAMPLE_CONTENT_PROVIDED",
        4_000_042: "INVALID_USER_STATUS",
        4_000_043: "INVALID_TRANSACTION_NOT_CONSUMABLE",
        4_000_044: "INVALID_REFUND_PREFERENCE",
        4_000_047: "INVALID_TRANSACTION_TYPE_NOT_SUPPORTED",
        4_000_048: "APP_TRANSACTION_ID_NOT_SUPPORTED_ERROR",
        4_000_183: "INVALID_APP_ACCOUNT_TOKEN_UUID_ERROR",
        4_000_185: "FAMILY_TRANSACTION_NOT_SUPPORTED_ERROR",
        4_000_187: "TRANSACTION_ID_IS_NOT_ORIGINAL_TRANSACTION_ID_ERROR",
        4_000_209: "CONSUMPTION_PERCENTAGE_AUTO_RENEWABLE_SUBSCRIPTION",
        4_030_004: "SUBSCRIPTION_EXTENSION_INELIGIBLE",
        4_030_005: "SUBSCRIPTION_MAX_EXTENSION",
        4_030_007: "FAMILY_SHARED_SUBSCRIPTION_EXTENSION_INELIGIBLE",
        4_040_001: "ACCOUNT_NOT_FOUND",
        4_040_002: "ACCOUNT_NOT_FOUND_RETRYABLE",
        4_040_003: "APP_NOT_FOUND",
        4_040_004: "APP_NOT_FOUND_RETRYABLE",
        4_040_005: "ORIGINAL_TRANSACTION_ID_NOT_FOUND",
        4_040_006: "ORIGINAL_TRANSACTION_ID_NOT_FOUND_RETRYABLE",
        4_040_007: "SERVER_NOTIFICATION_URL_NOT_FOUND",
        4_040_008: "TEST_NOTIFICATION_NOT_FOUND",
        4_040_009: "STATUS_REQUEST_NOT_FOUND",
        4_040_010: "TRANSACTION_ID_NOT_FOUND",
        4_040_019: "APP_TRANSACTION_DOES_NOT_EXIST_ERROR",
        4_290_000: "RATE_LIMIT_EXCEEDED",
        5_000_000: "GENERAL_INTERNAL",
        5_000_001: "GENERAL_INTERNAL_RETRYABLE",
    ]

    /// The codes Apple's "Errors to retry" lists (429 and other 5xx are retried by their status).
    static let retryableCodes: Set<Int> = [4_040_002, 4_040_004, 4_040_006, 5_000_001]
}
