import PropertyList

/// Where a definition was written: the file and the position of its start tag.
public struct SourceLocation: Sendable, Hashable, CustomStringConvertible {
    public var file: String
    public var position: SourcePosition

    public init(file: String, position: SourcePosition) {
        self.file = file
        self.position = position
    }

    public var description: String { "\(file):\(position)" }
}

/// A subscription's place in its group.
public struct Subscription: Sendable, Hashable {
    public var group: String
    /// An ISO 8601 duration such as `P1M`.
    public var period: String
    /// Apple's level of service within the group; 1 is the highest.
    public var rank: Int64?
}

/// A validated product definition.
public struct Product: Sendable {
    public var id: String
    public var type: ProductType?
    public var referenceName: String?
    public var status: ProductStatus
    /// The platforms it is sold on; nil means every platform of the app.
    public var platforms: [Platform]?
    public var minimumAppVersion: AppVersion?
    public var availableFrom: Timestamp?
    public var availableUntil: Timestamp?
    public var subscription: Subscription?
    public var displayOrder: Int64?
    /// The free-form `metadata` dict, already encoded as a JSON object for the rich feed.
    public var metadataJSON: [UInt8]?
    public var location: SourceLocation
    /// Why the feedback loop quarantined it (from `<app>.feedback.plist`); nil when it did not.
    public var quarantineReason: String?

    /// Whether feedback takes the product off sale: only a cleared product is on sale to begin
    /// with, and a retired or removed one keeps its own status in the known list.
    public var isQuarantined: Bool { status == .cleared && quarantineReason != nil }

    /// Whether the product is on sale at `moment`, ignoring platform and version.
    public func isOnSale(at moment: Timestamp) -> Bool {
        status == .cleared && !isQuarantined
            && (availableFrom.map { $0 <= moment } ?? true)
            && (availableUntil.map { moment < $0 } ?? true)
    }
}

/// Thresholds that turn invalid-identifier reports into verdicts (docs/feedback.md, "The policy").
public struct FeedbackPolicy: Sendable, Hashable, Codable {
    /// Distinct installs of any environment and network that make an identifier suspect.
    public var suspectAfterInstalls: Int64 = 3
    /// Production installs, at most ``installsPerNetwork`` from each network (verified installs
    /// without a cap), that quarantine an identifier.
    public var quarantineAfterInstalls: Int64 = 20
    public var windowHours: Int64 = 24
    public var graceHours: Int64 = 48
    public var minimumInvalidRate: Double = 0.5
    /// How many unverified installs one network adds toward a quarantine: one machine can invent
    /// any number of installs, not networks.
    public var installsPerNetwork: Int64 = 1
    /// The share of the app's sellable identifiers that automatic quarantine may hold off sale at
    /// once (at least one identifier); the rest wait, suspect, for an editor.
    public var quarantineBudget: Double = 0.1
    /// When more than this share of the sellable identifiers have a quarantine's evidence in one
    /// run, the store is failing, not the products: an alert, and no quarantine.
    public var storeWideShare: Double = 0.5

    public init() {}
}

/// One app's validated catalog, merged from all of its source files.
public struct AppCatalog: Sendable {
    /// The bundle identifier, which is also the file or folder name.
    public var app: String
    /// The platforms the app declares; empty when neither it nor its products name any.
    public var platforms: [Platform]
    public var feedbackPolicy: FeedbackPolicy
    /// The app's feedback file as read; its quarantines are applied to `products`.
    public var feedback = FeedbackFile()
    /// Products in source order: files by name, then position in the file.
    public var products: [Product]
    /// The source files, in the order they were merged.
    public var files: [String]
}
