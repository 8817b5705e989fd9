import Ledger

extension PurchaseRefusal.Code {
    /// Apple's old `verifyReceipt` status for this code, where one means the same, so that a client
    /// written against Apple's endpoint can map ours without a table.
    public var appleStatus: Int? {
        switch self {
        case .malformed: 21002
        case .notAuthenticated: 21003
        case .sandboxEvidence: 21007
        case .productionEvidence: 21008
        default: nil
        }
    }
}

/// Settings that cannot be used (a root that is not a certificate, a pin that does not match): raised
/// when a verifier is made, never while verifying.
public struct PurchaseConfigurationError: Error, Sendable, Hashable, CustomStringConvertible {
    /// What is wrong and where.
    public var description: String

    /// Makes an error with its message.
    public init(_ description: String) { self.description = description }
}
