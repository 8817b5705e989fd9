import PropertyList

/// A value as written in a source, with where it was written.
public struct Located<Value: Sendable>: Sendable {
    public var value: Value
    public var position: SourcePosition

    public init(_ value: Value, at position: SourcePosition) {
        self.value = value
        self.position = position
    }
}

/// A product as a source file spells it, before the rules run: both formats decode to this,
/// so that each rule exists once, whatever the format.
public struct ProductDefinition: Sendable {
    public var file: String
    public var position: SourcePosition
    public var id: Located<String>?
    public var type: Located<String>?
    public var referenceName: Located<String>?
    public var status: Located<String>?
    public var platforms: Located<[Located<String>]>?
    public var minimumAppVersion: Located<String>?
    public var availableFrom: Located<Timestamp>?
    public var availableUntil: Located<Timestamp>?
    public var subscription: SubscriptionDefinition?
    public var displayOrder: Located<Int64>?
    public var metadataJSON: [UInt8]?
    /// Keys present in the source with a value the decoder already reported as malformed:
    /// rules must not report them again as missing.
    public var malformedKeys: Set<String> = []

    public init(file: String, position: SourcePosition) {
        self.file = file
        self.position = position
    }
}

public struct SubscriptionDefinition: Sendable {
    public var position: SourcePosition
    public var group: Located<String>?
    public var period: Located<String>?
    public var rank: Located<Int64>?
}

/// App settings as one source file spells them.
public struct AppSettingsDefinition: Sendable {
    public var file: String
    public var app: Located<String>?
    public var platforms: Located<[Located<String>]>?
    public var feedbackPolicy: Located<FeedbackPolicyDefinition>?
}

public struct FeedbackPolicyDefinition: Sendable {
    public var integers: [String: Located<Int64>] = [:]
    public var minimumInvalidRate: Located<Double>?
}

/// What one source file holds.
public struct SourceDefinition: Sendable {
    public var settings: AppSettingsDefinition
    public var products: [ProductDefinition]
}
