/// Thresholds that turn invalid-identifier reports into verdicts (docs/feedback.md, "The policy").
public struct FeedbackPolicy: Sendable, Hashable, Codable {
    /// Distinct installs of any environment and network that make an identifier suspect.
    public var suspectAfterInstalls: Int64 = 3
    /// Production installs, at most ``installsPerNetwork`` from each network (verified installs
    /// without a cap), that quarantine an identifier.
    public var quarantineAfterInstalls: Int64 = 20
    /// Only reports received in the last this many hours count.
    public var windowHours: Int64 = 24
    /// Hours after an identifier first appears in a published revision during which its reports do not
    /// count: App Store propagation takes up to 48 hours.
    public var graceHours: Int64 = 48
    /// Where reports say what they requested, the share of production requests (0 to 1) that must have
    /// come back invalid before a quarantine.
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

    /// The default policy.
    public init() {}
}
