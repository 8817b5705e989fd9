/// Why a signature, a key certificate or a revocation statement was not trusted.
///
/// A struct with a ``Code`` rather than an enum, so that new cases do not break callers' switches.
public struct SignatureError: Error, Sendable, Hashable, CustomStringConvertible {
    /// What kind of failure it was.
    public struct Code: Sendable, Hashable, CustomStringConvertible {
        private let name: String

        /// No signature came with the feed.
        public static let missing = Code(name: "missing")
        /// Not a JWS of the expected shape, algorithm or size.
        public static let malformed = Code(name: "malformed")
        /// The signing key is not certified by a pinned root key, or its certificate has expired.
        public static let untrustedKey = Code(name: "untrustedKey")
        /// The signing key was revoked by a root-signed statement.
        public static let revokedKey = Code(name: "revokedKey")
        /// The signature does not match the bytes (tampered, or another key).
        public static let badSignature = Code(name: "badSignature")
        /// The signature expired longer ago than the grace allows: a frozen feed.
        public static let expired = Code(name: "expired")
        /// The feed takes effect (`from`) later than the verifier's clock allows: a scheduled
        /// change served before its moment, or a clock far off.
        public static let notYetValid = Code(name: "notYetValid")
        /// The signature claims to be trusted (`exp - iat`) for longer than
        /// ``FeedSignatureVerifier/maximumLifetime``, or its dates are out of order.
        public static let lifetimeTooLong = Code(name: "lifetimeTooLong")
        /// The signature was made for another app, feed kind or variant.
        public static let wrongBinding = Code(name: "wrongBinding")
        /// An older revision than one already accepted: a replay.
        public static let rollback = Code(name: "rollback")

        public var description: String { name }
    }

    /// What kind of failure it was.
    public var code: Code
    /// What went wrong, for logs.
    public var message: String

    /// An error of `code` with `message`.
    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    public var description: String { "\(code): \(message)" }
}
