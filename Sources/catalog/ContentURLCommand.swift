import AppStore
import ArgumentParser
import CatalogKit
import Content
import Foundation
import Ledger
import Logging

/// `catalog content url APP ITEM --customer ID`: for support, signed URLs of an item a customer may
/// download, or why they may not.
struct ContentURLCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "url",
        abstract: "Sign URLs for a customer's files of an item, or say why the customer may not have it.",
        discussion: """
            Applies the access rules of POST /v1/apps/{app}/content (docs/content.md) to the customer's \
            ledger in the store and the current revision's content manifest, with the keys of \
            --content-keys. Prints, for each file of ITEM, its path, size, SHA-256 and signed URL (joined \
            to --origin when given). Exit status 1, with the reason, when the customer may not download \
            ITEM: no such item, no such customer, a product not held (never bought, refunded, a \
            consumable, no period active), an issue published outside their periods.
            """
    )

    @OptionGroup var config: ConfigOptions
    @OptionGroup var catalogOptions: CatalogOptions
    @OptionGroup var storeOptions: StoreOptions

    @Option(
        name: Setting.contentKeys.long,
        help: ArgumentHelp(
            "The content key ring, read as catalog serve reads it: this flag, else CATALOG_CONTENT_KEYS, else content-keys in the --config file.",
            valueName: "file"))
    var contentKeys: String?

    @Option(
        name: Setting.contentURLLifetime.long,
        help: ArgumentHelp("How long the URLs stay valid (at most 1d). Default: 1h.", valueName: "duration"))
    var contentUrlLifetime: Interval?

    @Option(help: ArgumentHelp("Any of the customer's keys (as catalog customers show takes).", valueName: "id"))
    var customer: String

    @Option(help: ArgumentHelp("The server's origin, such as https://cdn.example.com, put before each URL.", valueName: "url"))
    var origin: String?

    @Option(
        help: ArgumentHelp(
            "The instant the access rules are applied at, RFC 3339 (default: now); the URLs' lifetime still counts from now.",
            valueName: "instant"))
    var at: String?

    @Argument(help: "The app's bundle id.")
    var app: String

    @Argument(help: "The content item's id.")
    var item: String

    func validate() throws {
        if let problem = AppName.problem(app) { throw ValidationError(problem) }
        if let at, CustomerAnswer.instant(at) == nil { throw ValidationError("--at must be an RFC 3339 instant, not \(at)") }
    }

    func run() async throws {
        let configured = try config.settings()
        let paths = try catalogOptions.paths(configured)
        let resolved = try ContentOptions(contentKeys: contentKeys, contentUrlLifetime: contentUrlLifetime).resolve(configured)
        guard resolved.keysFile != nil else {
            printError("--content-keys is needed to sign URLs (the key ring catalog serve uses)")
            throw ExitCode(1)
        }
        let content = try ContentOptions.configuration(resolved)
        guard let keyRing = content.keyRing else { throw ExitCode(1) }
        let settings = try PurchaseCommands.settings(of: app, catalog: paths, roots: [])
        let tree = PublicTree(root: URL(fileURLWithPath: paths.publicDirectory, isDirectory: true))
        guard let revision = try tree.currentManifest(app)?.revision else {
            printError("'\(app)' is not published in \(paths.publicDirectory)")
            throw ExitCode(1)
        }
        let manifest: ContentManifest
        switch tree.servedContentManifest(app, revision: revision) {
        case .failure(let error):
            printError("\(error)")
            throw ExitCode(1)
        case .success(let found): manifest = found
        }
        guard let wanted = manifest.items.first(where: { $0.id == item }) else {
            let names = manifest.items.map(\.id)
            printError(
                "revision \(revision) of '\(app)' has no content item '\(item)'"
                    + (names.isEmpty ? " (it delivers no content)" : "; its items: \(names.joined(separator: ", "))"))
            throw ExitCode(1)
        }
        let instant = at.flatMap(CustomerAnswer.instant) ?? Date()
        let logger = Logger(label: "catalog.content")
        try await storeOptions.withStore(configured, logger: logger) { purchases in
            guard let record = try await purchases.customer(app: app, id: customer) else {
                printError("no customer of '\(app)' has the key '\(customer)'")
                throw ExitCode(1)
            }
            let grants = CustomerContent.grants(
                record: record, catalog: settings.catalog, groups: settings.subscriptionGroups, manifest: manifest, at: instant)
            guard let grant = grants.first(where: { $0.itemId == item }) else {
                let reasons = CustomerContent.refusals(
                    record: record, catalog: settings.catalog, groups: settings.subscriptionGroups, manifest: manifest, granted: grants,
                    at: instant)
                printError("customer \(record.id) may not download '\(item)': \(reasons[item] ?? "the access rules do not grant it")")
                throw ExitCode(1)
            }
            // --at is when the rules are applied; the URLs are signed now, and live their lifetime from now.
            let downloads = ContentDownload.list(
                grants: [grant], manifest: manifest, keyRing: keyRing, now: Date(), lifetime: content.urlLifetime)
            print("customer \(record.id) may download '\(item)' version \(wanted.version): \(CustomerContent.explain(grant.reason))")
            for file in downloads.flatMap(\.files) {
                print("\(file.path)  \(file.size) bytes  sha256 \(file.sha256.hex)  expires \(file.expires)")
                print("  \((origin.map { $0.hasSuffix("/") ? String($0.dropLast()) : $0 } ?? "") + file.url)")
            }
        }
    }
}

extension ContentOptions {
    /// The options as given to another command than `serve`, resolved the same way.
    init(contentKeys: String?, contentUrlLifetime: Interval?) {
        self.init()
        self.contentKeys = contentKeys
        self.contentUrlLifetime = contentUrlLifetime
    }
}
