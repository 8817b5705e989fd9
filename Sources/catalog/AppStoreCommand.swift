import AppStore
import AppStoreServerAPI
import ArgumentParser
import CatalogKit
import Crypto
import Foundation
import Ledger
import Logging
import OutboundAPI
import Storage

/// `catalog appstore`: the App Store Server API, from the terminal (docs/app-store-api.md).
struct AppStoreCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "appstore",
        abstract: "Ask the App Store Server API what offline evidence cannot know.",
        discussion: """
            Each command calls the API with the In-App Purchase key the app's catalog settings name \
            (serverAPIKeyId, serverAPIIssuerId, serverAPIKeyFile). Everything Apple answers is verified \
            like evidence that arrives by itself. See docs/app-store-api.md.
            """,
        subcommands: [
            AppStoreReconcileCommand.self, AppStoreImportCommand.self, AppStoreTestNotificationCommand.self,
            AppStoreStatusCommand.self,
        ]
    )
}

/// What every `catalog appstore` command takes: the app's settings, and where the API is.
struct AppStoreAPIOptions: ParsableArguments {
    @Option(
        help: ArgumentHelp(
            "Call this base URL instead of Apple's (a stand-in of the API, in tests); http is allowed to loopback only.",
            valueName: "url"))
    var apiURL: String?

    @Option(help: ArgumentHelp("The environment to call: production or sandbox. Default: each the app accepts.", valueName: "name"))
    var environment: String?

    @Option(help: ArgumentHelp("Another trusted root certificate (PEM or DER); repeatable. Default: Apple's two only.", valueName: "file"))
    var rootCertificate: [String] = []

    func validate() throws {
        if let environment, AppStoreAPIEnvironment(rawValue: environment) == nil {
            throw ValidationError("--environment must be production or sandbox, not \(environment)")
        }
        if let apiURL, AppStoreAPIEnvironment.baseURL(apiURL) == nil {
            throw ValidationError("--api-url must be an https URL (http only to a loopback host), not \(apiURL)")
        }
    }

    /// The environments to call for `app`: the one asked for, else production and sandbox as the app accepts them.
    func environments(_ app: AppPurchases) -> [AppStoreAPIEnvironment] {
        if let environment, let chosen = AppStoreAPIEnvironment(rawValue: environment) { return [chosen] }
        return AppStoreAPIEnvironment.accepted(by: app)
    }

    /// `app`'s settings, which must name the API's credentials.
    func settings(of app: String, catalog: CatalogPaths) throws -> AppPurchases {
        let settings = try PurchaseCommands.settings(of: app, catalog: catalog, roots: rootCertificate)
        guard settings.serverAPI != nil else {
            printError(
                "\(app) names no App Store Server API key: set serverAPIKeyId, serverAPIIssuerId and serverAPIKeyFile (docs/app-store-api.md)"
            )
            throw ExitCode(1)
        }
        return settings
    }

    /// Runs `body` with a client of each environment, and the transport closed afterwards.
    func withClients<Result>(
        _ app: AppPurchases, _ body: ([AppStoreServerAPIClient]) async throws -> Result
    ) async throws -> Result {
        guard let credentials = AppStoreAPICredentials(app) else { throw ExitCode(1) }
        let tokens = APITokenSource(credentials)
        let transport = HTTPClientTransport()
        let clients = environments(app).map { environment in
            AppStoreServerAPIClient(
                environment: environment, baseURL: apiURL.flatMap(AppStoreAPIEnvironment.baseURL), tokens: tokens, transport: transport)
        }
        do {
            let result = try await body(clients)
            try? await transport.shutdown()
            return result
        } catch let error as AppStoreAPIError {
            try? await transport.shutdown()
            printError("\(error)")
            throw ExitCode(1)
        } catch {
            try? await transport.shutdown()
            throw error
        }
    }
}

/// `catalog appstore reconcile APP`: the notifications the store missed, from Apple's history.
struct AppStoreReconcileCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "reconcile",
        abstract: "Record the notifications the store missed, from Apple's notification history.",
        discussion: """
            Pages through Get Notification History from where the last run stopped (the first run: the \
            last three days), or with --since from that long ago (at most 180 days; 30 in the sandbox), \
            and records every notification the store lacks as the notification endpoint would. Safe to \
            stop and run again: it resumes at the page it was reading. catalog serve does the same every \
            hour on the editor node.
            """
    )

    @OptionGroup var config: ConfigOptions
    @OptionGroup var catalogOptions: CatalogOptions
    @OptionGroup var storeOptions: StoreOptions
    @OptionGroup var api: AppStoreAPIOptions

    @Option(help: ArgumentHelp("Read a new window from this long ago, such as 30d or 12h.", valueName: "interval"))
    var since: Interval?

    @Argument(help: "The app's bundle id.")
    var app: String

    func run() async throws {
        let configured = try config.settings()
        let settings = try api.settings(of: app, catalog: try catalogOptions.paths(configured))
        let since = self.since.map { Date().addingTimeInterval(-TimeInterval($0.seconds)) }
        try await storeOptions.withStore(configured, logger: Logger(label: "catalog.appstore")) { store in
            try await api.withClients(settings) { clients in
                for client in clients {
                    let reconciler = NotificationReconciler(app: settings, client: client, store: store, positions: store)
                    let environment = client.environment.rawValue
                    let summary = try await reconciler.run(since: since) { summary in
                        printError(
                            "\(app) \(environment): page \(summary.pages), \(summary.stored) stored, \(summary.duplicates) already kept")
                    }
                    for refusal in summary.refusals { printError("\(app) \(environment): refused: \(refusal)") }
                    print(
                        "\(app) \(environment): \(summary.received) notifications in \(summary.pages) pages, \(summary.stored) stored, "
                            + "\(summary.duplicates) already kept, \(summary.refused) refused; \(Self.describe(summary.behind)) behind")
                }
            }
        }
    }

    static func describe(_ seconds: TimeInterval) -> String {
        seconds < 120 ? "\(Int(seconds)) s" : seconds < 7_200 ? "\(Int(seconds / 60)) min" : "\(Int(seconds / 3_600)) h"
    }
}

/// `catalog appstore import APP FILE`: existing customers, from Apple's transaction history.
struct AppStoreImportCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "import",
        abstract: "Record existing customers' whole history, from one transaction id each.",
        discussion: """
            FILE holds transaction ids, one a line (blank lines and lines starting with # are skipped), \
            as exported from another system. For each, Get Transaction History is paged (production, \
            then the sandbox when production does not know the id and the app accepts it), and for \
            subscribers Get All Subscription Statuses; everything is verified and recorded. Safe to \
            stop and run again: it resumes at the batch it was in, and records nothing twice.
            """
    )

    @OptionGroup var config: ConfigOptions
    @OptionGroup var catalogOptions: CatalogOptions
    @OptionGroup var storeOptions: StoreOptions
    @OptionGroup var api: AppStoreAPIOptions

    @Option(help: "Customers imported at once.")
    var concurrency: Int = 4

    @Argument(help: "The app's bundle id.")
    var app: String

    @Argument(help: "The file of transaction ids.")
    var file: String

    func validate() throws {
        guard (1...32).contains(concurrency) else { throw ValidationError("--concurrency must be 1 to 32") }
    }

    func run() async throws {
        let configured = try config.settings()
        let settings = try api.settings(of: app, catalog: try catalogOptions.paths(configured))
        guard let data = FileManager.default.contents(atPath: file) else {
            printError("cannot read \(file)")
            throw ExitCode(1)
        }
        let ids = String(decoding: data, as: UTF8.self).split(whereSeparator: \.isNewline)
            .map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty && !$0.hasPrefix("#") }
        // The position is the file's: the same ids resume, another file starts anew.
        let stream = "import/" + SHA256.hash(data: data).map { String(format: "%02x", $0) }.joined().prefix(32)
        let started = Date()
        try await storeOptions.withStore(configured, logger: Logger(label: "catalog.appstore")) { store in
            try await api.withClients(settings) { clients in
                let importer = CustomerImporter(app: settings, clients: clients, store: store)
                let total = ids.count
                let summary = try await importer.importAll(ids, stream: stream, positions: store, concurrency: concurrency) {
                    line, summary in
                    printError(
                        "\(line) / \(total) ids: \(summary.customers) customers, \(summary.purchases) purchases, \(summary.refused) refused"
                    )
                }
                for refusal in summary.refusals { printError("refused: \(refusal)") }
                print(
                    "\(app): \(summary.customers) customers, \(summary.purchases) purchases, \(summary.periods) periods, "
                        + "\(summary.refused) refused, \(summary.calls) API calls in \(String(format: "%.1f", Date().timeIntervalSince(started))) s"
                )
            }
        }
    }
}

/// `catalog appstore test-notification APP`: does Apple reach this server?
struct AppStoreTestNotificationCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "test-notification",
        abstract: "Ask Apple for a test notification, and report whether it reached the server.",
        discussion: """
            Calls Request a Test Notification, then Get Test Notification Status until Apple reports \
            its attempt (at most --wait). Exit status 0 when the notification URL answered, 1 otherwise. \
            With a store, also says whether the TEST notification is in it.
            """
    )

    @OptionGroup var config: ConfigOptions
    @OptionGroup var catalogOptions: CatalogOptions
    @OptionGroup var storeOptions: StoreOptions
    @OptionGroup var api: AppStoreAPIOptions

    @Option(help: ArgumentHelp("How long to wait for Apple's attempt, such as 30s.", valueName: "interval"))
    var wait: Interval = Interval("60s")!

    @Argument(help: "The app's bundle id.")
    var app: String

    func run() async throws {
        let configured = try config.settings()
        let settings = try api.settings(of: app, catalog: try catalogOptions.paths(configured))
        let reached = try await api.withClients(settings) { clients -> Bool in
            var reached = true
            for client in clients {
                let token = try await client.requestTestNotification()
                guard let value = token.testNotificationToken else {
                    printError("\(client.environment.rawValue): Apple sent no testNotificationToken")
                    reached = false
                    continue
                }
                let deadline = Date().addingTimeInterval(TimeInterval(wait.seconds))
                var status: CheckTestNotificationResponse?
                while status == nil {
                    do {
                        status = try await client.testNotificationStatus(value)
                    } catch let error as AppStoreAPIError where error.code == 4_040_008 && Date() < deadline {
                        // Not yet available: Apple is still sending it.
                        try await Task.sleep(for: .seconds(2))
                    }
                }
                let attempts = status?.sendAttempts ?? []
                let results = attempts.compactMap(\.sendAttemptResult)
                let ok = results.contains("SUCCESS")
                print(
                    "\(app) \(client.environment.rawValue): "
                        + (ok ? "the test notification reached the server" : "the test notification did not reach the server")
                        + " (\(results.isEmpty ? "no attempt yet" : results.joined(separator: ", ")))")
                reached = reached && ok
            }
            return reached
        }
        if !reached { throw ExitCode(1) }
    }
}

/// `catalog appstore status APP ID`: Apple's view of a customer's subscriptions beside the ledger's.
struct AppStoreStatusCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "status",
        abstract: "Show Apple's view of a customer's subscriptions beside the ledger's, and where they differ.",
        discussion: """
            ID is one of the customer's transaction ids. Calls Get All Subscription Statuses, verifies \
            each answer, and compares each subscription's state with the ledger's entitlements now. Exit \
            status 0 when they agree, 2 when they differ, 1 on error.
            """
    )

    @OptionGroup var config: ConfigOptions
    @OptionGroup var catalogOptions: CatalogOptions
    @OptionGroup var storeOptions: StoreOptions
    @OptionGroup var api: AppStoreAPIOptions

    @Argument(help: "The app's bundle id.")
    var app: String

    @Argument(help: "One of the customer's transaction ids.")
    var id: String

    func run() async throws {
        let configured = try config.settings()
        let settings = try api.settings(of: app, catalog: try catalogOptions.paths(configured))
        let now = Date()
        let differences = try await storeOptions.withStore(configured, logger: Logger(label: "catalog.appstore")) { store in
            let record = try await store.customer(app: app, id: id)
            let ledger = record.map { CustomerAnswer($0, at: now, catalog: settings.catalog, full: false).body.entitlements } ?? []
            return try await api.withClients(settings) { clients -> Int in
                var differences = 0
                for client in clients {
                    let statuses: StatusResponse
                    do {
                        statuses = try await client.subscriptionStatuses(id)
                    } catch let error as AppStoreAPIError where error.code == 4_040_010 {
                        continue
                    }
                    for group in statuses.data ?? [] {
                        for last in group.lastTransactions ?? [] {
                            let line = try await Self.compare(last, ledger: ledger, verifier: settings.verifier)
                            print("\(client.environment.rawValue) \(line.text)")
                            if !line.agrees { differences += 1 }
                        }
                    }
                }
                return differences
            }
        }
        if differences > 0 {
            print("\(differences) subscription\(differences == 1 ? "" : "s") differ")
            throw ExitCode(2)
        }
    }

    /// One subscription: Apple's status, what the ledger grants, and whether they agree (Apple's
    /// active and grace period are entitled, the other states not).
    static func compare(_ last: LastTransaction, ledger: [CustomerAnswer.Entitlement], verifier: SignedDataVerifier) async throws -> (
        text: String, agrees: Bool
    ) {
        guard let signed = last.signedTransactionInfo else {
            return ("\(last.originalTransactionId ?? "?"): Apple sent no transaction", false)
        }
        let transaction: JWSTransactionDecodedPayload
        do {
            transaction = try await verifier.verifyAndDecodeTransaction(signed)
        } catch {
            return ("\(last.originalTransactionId ?? "?"): Apple's transaction does not verify: \(error)", false)
        }
        let product = transaction.productId ?? "?"
        let appleEntitled = last.status == 1 || last.status == 4
        let granted = ledger.filter { $0.productId == product }.map(\.entitlement)
        let ledgerEntitled = !granted.isEmpty
        let agrees = appleEntitled == ledgerEntitled
        let ledgerText = ledgerEntitled ? "ledger grants \(granted.joined(separator: ", "))" : "ledger grants nothing"
        return (
            "\(transaction.originalTransactionId ?? "?") \(product): Apple says \(last.statusName), \(ledgerText)"
                + (agrees ? "" : "  <- differs"), agrees
        )
    }
}
