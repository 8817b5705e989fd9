import Foundation

/// Why a list did not come from the server just now, or why a report or a purchase was not sent.
///
/// A struct with a ``Code`` rather than an enum, so that new cases do not break callers' switches.
public struct CatalogClientError: Error, Sendable, Hashable, CustomStringConvertible {
    /// What kind of failure it was.
    public struct Code: Sendable, Hashable, CustomStringConvertible {
        private enum Value: Sendable, Hashable {
            case transport, server, rejected, malformedResponse, storage, signature, responseTooLarge, noReportEndpoint, digestMismatch
            case boundToAnotherCustomer, storeKit
        }
        private let value: Value

        /// The request got no HTTP answer: no network, connection refused, a timeout, TLS.
        public static let transport = Code(value: .transport)
        /// The server answered 5xx or 429: worth trying again later.
        public static let server = Code(value: .server)
        /// The server refused the request with another 4xx: trying again will not help.
        public static let rejected = Code(value: .rejected)
        /// A 200 whose body is not a feed (a captive portal's login page, say).
        public static let malformedResponse = Code(value: .malformedResponse)
        /// The client's own files could not be read or written.
        public static let storage = Code(value: .storage)
        /// The feed's signature was missing or not trusted (see ``CatalogClient/SignaturePolicy``);
        /// the message says which check failed.
        public static let signature = Code(value: .signature)
        /// The answer was larger than ``CatalogClient/Configuration/maximumResponseBytes``, by its
        /// `Content-Length` or once decompressed: the client stopped reading it.
        public static let responseTooLarge = Code(value: .responseTooLarge)
        /// Reports (or purchases) have nowhere to go: the report URL answered 404 or 405 without the error body
        /// `catalog serve` sends, as a static host or CDN does. Reports and purchases stay queued (within
        /// ``CatalogClient/Configuration/maximumQueuedReports`` and
        /// ``CatalogClient/Configuration/maximumReportAge``) and are tried again after a back-off;
        /// point ``CatalogClient/Configuration/reportServer`` at a `catalog serve`.
        public static let noReportEndpoint = Code(value: .noReportEndpoint)
        /// A downloaded content file is not the SHA-256 the content list gives: its bytes were
        /// deleted, never handed over (``ContentDownloadManager``).
        public static let digestMismatch = Code(value: .digestMismatch)
        /// The server refused a purchase for good because it belongs to another account of the app
        /// (409, ``CatalogClientError/serverCode`` `bound-to-another-customer`, under the app's `keep`
        /// policy): tell the person "this purchase belongs to another account". Not sent again;
        /// ``RefusedPurchase/entitlements`` holds what their account does own.
        public static let boundToAnotherCustomer = Code(value: .boundToAnotherCustomer)
        /// The store on the device failed a restore: `AppStore.sync()` (which StoreKit also reports
        /// as a cancellation when the device is offline), or reading its transactions
        /// (``SignedTransactionSource``).
        public static let storeKit = Code(value: .storeKit)

        /// The code's name, such as `transport`.
        public var description: String {
            switch value {
            case .transport: "transport"
            case .server: "server"
            case .rejected: "rejected"
            case .malformedResponse: "malformedResponse"
            case .storage: "storage"
            case .signature: "signature"
            case .responseTooLarge: "responseTooLarge"
            case .noReportEndpoint: "noReportEndpoint"
            case .digestMismatch: "digestMismatch"
            case .boundToAnotherCustomer: "boundToAnotherCustomer"
            case .storeKit: "storeKit"
            }
        }
    }

    /// What kind of failure it was.
    public var code: Code
    /// What went wrong, for logs: the URL and the transport's reason, or the server's message.
    public var message: String
    /// The HTTP status, when there was an answer.
    public var status: Int?
    /// Seconds the server asked to wait before trying again (`Retry-After`), when it did.
    public var retryAfter: TimeInterval?
    /// The server's own code for a refusal, when it sent one (`{"error":{"code":…}}`): for a
    /// purchase, `not-authenticated`, `wrong-app`, `sandbox-evidence`, `production-evidence`,
    /// `environment-not-accepted`, `malformed`, `unknown-product` or `bound-to-another-customer`
    /// (docs/purchases.md, "Refusals").
    public var serverCode: String?

    /// An error of `code`; `status` when the server answered.
    public init(code: Code, message: String, status: Int? = nil) {
        self.code = code
        self.message = message
        self.status = status
    }

    /// The ``message``.
    public var description: String { message }

    /// Whether a later attempt may succeed: transport failures, 5xx and 429.
    var isRetryable: Bool { code == .transport || code == .server }
}

extension CatalogClientError.Code {
    /// Every code, to read one back from its name (a refusal kept on disk).
    private static let all: [Self] = [
        .transport, .server, .rejected, .malformedResponse, .storage, .signature, .responseTooLarge, .noReportEndpoint,
        .digestMismatch, .boundToAnotherCustomer, .storeKit,
    ]

    /// The code whose ``description`` is `name`.
    init?(name: String) {
        guard let code = Self.all.first(where: { $0.description == name }) else { return nil }
        self = code
    }
}
