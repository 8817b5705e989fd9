import AppStore
import ArgumentParser
import CatalogKit
import Foundation
import Ledger
import Logging
import Storage

/// `catalog customers`: what the store knows of an app's customers.
struct CustomersCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "customers",
        abstract: "Read customers and what they own.",
        subcommands: [CustomersShowCommand.self]
    )
}

/// `catalog customers show APP ID`: the customer endpoint's answer, from the terminal.
struct CustomersShowCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "show",
        abstract: "Print a customer as JSON: keys, purchases, periods, entitlements and credits, transfers.",
        discussion: """
            ID is any of the customer's keys: an appAccountToken, an appTransactionId, an originalTransactionId \
            or a transactionId. The answer is GET /v1/apps/{app}/customers/{id}'s (docs/purchases.md). Exit \
            status 1 when no customer has the key.
            """
    )

    @OptionGroup var config: ConfigOptions
    @OptionGroup var catalogOptions: CatalogOptions
    @OptionGroup var storeOptions: StoreOptions

    @Option(help: ArgumentHelp("The instant entitlements are taken at, RFC 3339. Default: now.", valueName: "instant"))
    var at: String?

    @Argument(help: "The app's bundle id.")
    var app: String

    @Argument(help: "Any of the customer's keys.")
    var id: String

    func validate() throws {
        if let at, CustomerAnswer.instant(at) == nil { throw ValidationError("--at must be an RFC 3339 instant, not \(at)") }
    }

    func run() async throws {
        let configured = try config.settings()
        let settings = try PurchaseCommands.settings(of: app, catalog: try catalogOptions.paths(configured), roots: [])
        let instant = at.flatMap(CustomerAnswer.instant) ?? Date()
        let logger = Logger(label: "catalog.customers")
        try await storeOptions.withStore(configured, logger: logger) { purchases in
            guard let record = try await purchases.customer(app: app, id: id) else {
                printError("no customer of '\(app)' has the key '\(id)'")
                throw ExitCode(1)
            }
            print(String(decoding: CustomerAnswer(record, at: instant, catalog: settings.catalog, full: true).json, as: UTF8.self))
        }
    }
}

/// `catalog purchases rebuild`: the ledger's evidence replayed from the raw notifications.
struct PurchasesRebuildCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "rebuild",
        abstract: "Replay the stored App Store notifications into a fresh ledger.",
        discussion: """
            Deletes the payloads notifications brought (never the raw notifications, the customers, \
            their bindings or what apps sent), then verifies every stored notification again, with the \
            app's current settings, and records its payloads, in order of arrival. A notification that no \
            longer verifies is counted and left out. Safe to run again if interrupted. Stop catalog serve \
            first: notifications it takes meanwhile would be replayed twice (harmlessly) or, taken between \
            the deletion and their replay, missed until the next rebuild. See docs/purchases.md.
            """
    )

    @OptionGroup var config: ConfigOptions
    @OptionGroup var catalogOptions: CatalogOptions
    @OptionGroup var storeOptions: StoreOptions

    @Option(help: ArgumentHelp("Another trusted root certificate (PEM or DER); repeatable. Default: Apple's two only.", valueName: "file"))
    var rootCertificate: [String] = []

    @Argument(help: "The apps to rebuild. Default: every app with sources.")
    var apps: [String] = []

    func run() async throws {
        let configured = try config.settings()
        let paths = try catalogOptions.paths(configured)
        let names = apps.isEmpty ? paths.workflow.validate().catalogs.map(\.app) : apps
        let logger = Logger(label: "catalog.purchases")
        var settings: [String: AppPurchases] = [:]
        for name in names { settings[name] = try PurchaseCommands.settings(of: name, catalog: paths, roots: rootCertificate) }
        try await storeOptions.withStore(configured, logger: logger) { purchases in
            for name in names {
                guard let app = settings[name] else { continue }
                let cleared = try await purchases.clearNotificationEvidence(app: name)
                var (replayed, refused, after) = (0, 0, Int64(0))
                while true {
                    let page = try await purchases.notifications(app: name, after: after, limit: 500)
                    guard let last = page.last else { break }
                    after = last.sequence
                    var batch: [PurchaseSubmission] = []
                    // Google Play's notifications carry no evidence: what they said was asked of Google.
                    for raw in page where raw.marketplace == .appStore {
                        do {
                            let verified = try await app.verifier.verifyAndDecodeNotification(raw.body)
                            guard
                                var submission = PurchaseSubmission.notification(
                                    verified, app: name, body: raw.body, receivedAt: raw.receivedAt, transferPolicy: app.transferPolicy)
                            else { throw PurchaseRefusal(.malformed, "no notificationUUID") }
                            submission.isReplay = true
                            batch.append(submission)
                        } catch {
                            refused += 1
                            printError("\(name): notification \(raw.notificationId) (#\(raw.sequence)) no longer verifies: \(error)")
                        }
                    }
                    _ = try await purchases.record(batch)
                    replayed += batch.count
                }
                print("\(name): \(cleared) payloads cleared, \(replayed) notifications replayed, \(refused) refused")
            }
        }
    }
}

/// What the purchase commands share.
enum PurchaseCommands {
    /// The purchase settings of `app`'s validated sources, trusting Apple's roots and `roots`.
    static func settings(of app: String, catalog: CatalogPaths, roots: [String]) throws -> AppPurchases {
        let validation = catalog.workflow.validate()
        guard let found = validation.catalogs.first(where: { $0.app == app }) else {
            report(validation.diagnostics.filter { $0.severity == .error })
            printError("no valid catalog sources for '\(app)' in \(catalog.catalog)")
            throw ExitCode(1)
        }
        do {
            let trust = try PurchaseTrust.apple().adding(try PurchaseTrust.certificates(fromFiles: roots))
            return try AppPurchases(found, trust: trust)
        } catch {
            printError("\(error)")
            throw ExitCode(1)
        }
    }

}
