import Ledger
import X509

/// What an app's settings say about the evidence it accepts: the facts a verifier binds evidence to.
///
/// A field left nil is not checked, which is what a support tool wants (`catalog purchases verify`
/// without `--app`); a server passes the app's settings, so every field is set.
public struct AppStoreApp: Sendable, Hashable {
    /// The bundle identifier evidence must name.
    public var bundleId: String?
    /// The app's Apple id, which production evidence that carries one (notifications, AppTransactions,
    /// receipts) must name. With it nil, such evidence is refused rather than taken on trust.
    public var appAppleId: Int64?
    /// The environments accepted. The default is production and sandbox: App Review and TestFlight
    /// buy in the sandbox against the production server.
    public var environments: Set<AppStoreEnvironment>
    /// The certificate the developer exported from Xcode, which signs StoreKit testing evidence. Only
    /// with it set is Xcode evidence accepted, and then only when that certificate signed it.
    public var xcodeCertificate: Certificate?
    /// Whether production evidence that names an Apple id is refused while `appAppleId` is nil and
    /// `bundleId` is set. True by default: an app's purchase settings take no evidence on trust. False
    /// for a caller that has no Apple id to bind to and asks only "did the App Store sign this for
    /// that bundle?" (report intake for an app without purchase settings, docs/reports.md). A set
    /// `appAppleId` is checked either way.
    public var refusesAppAppleIdWhenUnset: Bool

    /// Makes an app's expectations; every check defaults to off, environments to production and sandbox.
    public init(
        bundleId: String? = nil, appAppleId: Int64? = nil,
        environments: Set<AppStoreEnvironment> = [.production, .sandbox], xcodeCertificate: Certificate? = nil,
        refusesAppAppleIdWhenUnset: Bool = true
    ) {
        self.bundleId = bundleId
        self.appAppleId = appAppleId
        self.environments = environments
        self.xcodeCertificate = xcodeCertificate
        self.refusesAppAppleIdWhenUnset = refusesAppAppleIdWhenUnset
    }

    /// Whether `appAppleId` is checked: when it is set, or when a bundle id is set (an app's
    /// settings) unless `refusesAppAppleIdWhenUnset` is off, so that a support tool with no
    /// expectations reads any app's evidence.
    var bindsAppAppleId: Bool { appAppleId != nil || (bundleId != nil && refusesAppAppleIdWhenUnset) }
}
