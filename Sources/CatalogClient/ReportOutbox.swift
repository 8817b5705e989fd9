import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// What one round of sending queued reports did.
public struct ReportDelivery: Sendable, Hashable, QueueDelivery {
    /// Reports the server accepted (202) in this round.
    public var sent = 0
    /// Reports removed unsent: refused by the server with a 4xx other than 429, too old, or unreadable.
    public var dropped = 0
    /// Reports still queued.
    public var pending = 0
    /// When the queue will be tried again, if the server asked to wait or a delivery failed.
    public var nextAttempt: Date?
    /// Why the round stopped early, if it did.
    public var error: CatalogClientError?
}

/// The persistent queue of invalid-identifier reports and the one loop that sends it.
///
/// One file per report under `<dataDirectory>/reports/`, named so that names sort in queue order,
/// holding the exact request body: a resend after a crash is byte for byte the same report with
/// the same `reportId`, which the server stores once.
actor ReportOutbox: QueueSender {
    private let configuration: CatalogClient.Configuration
    private let transport: HTTPTransport
    private let directory: URL
    /// Where the time before which nothing is sent survives a relaunch, so that an app opened
    /// again and again does not hammer a server that answered 429.
    private var waitFile: URL { directory.appendingPathComponent("send-after") }
    private var installID: String?
    /// Failed rounds in a row, for the exponential back-off.
    private var failures = 0
    /// Whether the log already says that reports have nowhere to go: once per process, not per round.
    private var saidNoEndpoint = false
    var round: Task<ReportDelivery, Never>?
    var background: Task<Void, Never>?

    init(configuration: CatalogClient.Configuration, transport: HTTPTransport) {
        self.configuration = configuration
        self.transport = transport
        directory = configuration.dataDirectory.appendingPathComponent("reports", isDirectory: true)
    }

    // MARK: Queueing

    /// The server refuses bodies over 64 KiB and lists over 1000 identifiers.
    static let maximumBodyBytes = 64 * 1024
    static let maximumIdentifiers = 1000

    /// The server reads an AppTransaction JWS of at most this many bytes.
    static let maximumAppTransactionBytes = 16 * 1024

    func enqueue(
        invalid: [String], requested: [String]?, environment: StoreEnvironment, storefront: String?, feedRevision: Int?,
        appTransaction: String? = nil
    ) throws(CatalogClientError) -> [String] {
        var seen = Set<String>()
        let unique = invalid.filter { WireRules.isIdentifier($0) && seen.insert($0).inserted }
        if unique.count < Set(invalid).count {
            configuration.log("report: \(Set(invalid).count - unique.count) identifiers left out, not valid product identifiers")
        }
        guard !unique.isEmpty else { return [] }
        try DurableFile.makeDirectory(directory)
        let template = WireReport(
            invalidProductIdentifiers: [],
            // A list the server would refuse would take the whole report down with it: leave it out.
            requestedProductIdentifiers: requested.map { $0.filter(WireRules.isIdentifier) }.flatMap {
                $0.count <= Self.maximumIdentifiers ? $0 : nil
            },
            platform: configuration.platform?.rawValue, appVersion: WireRules.appVersion(configuration.appVersion),
            environment: environment.rawValue, storefront: WireRules.storefront(storefront), feedRevision: feedRevision,
            installId: try installIdentifier(), reportId: "",
            appTransaction: appTransaction.flatMap { (1...Self.maximumAppTransactionBytes).contains($0.utf8.count) ? $0 : nil })
        var reportIDs: [String] = []
        var chunks = stride(from: 0, to: unique.count, by: Self.maximumIdentifiers).map {
            Array(unique[$0..<min($0 + Self.maximumIdentifiers, unique.count)])
        }
        while !chunks.isEmpty {
            let chunk = chunks.removeFirst()
            var report = template
            report.invalidProductIdentifiers = chunk
            report.reportId = UUID().uuidString.lowercased()
            var body = try Self.encode(report)
            if body.count > Self.maximumBodyBytes, report.appTransaction != nil {
                report.appTransaction = nil
                body = try Self.encode(report)
            }
            if body.count > Self.maximumBodyBytes, report.requestedProductIdentifiers != nil {
                report.requestedProductIdentifiers = nil
                body = try Self.encode(report)
            }
            if body.count > Self.maximumBodyBytes, chunk.count > 1 {
                chunks.insert(contentsOf: [Array(chunk[..<(chunk.count / 2)]), Array(chunk[(chunk.count / 2)...])], at: 0)
                continue
            }
            try DurableFile.write(body, to: directory.appendingPathComponent(DurableFile.queuedName(id: report.reportId)))
            reportIDs.append(report.reportId)
        }
        trimQueue()
        if configuration.sendsReportsAutomatically { startSending() }
        return reportIDs
    }

    /// The request body of `POST /v1/apps/{app}/invalid-identifiers`.
    struct WireReport: Codable {
        var invalidProductIdentifiers: [String]
        var requestedProductIdentifiers: [String]?
        var platform: String?
        var appVersion: String?
        var environment: String
        var storefront: String?
        var feedRevision: Int?
        var installId: String
        var reportId: String
        /// The app's StoreKit 2 `AppTransaction` JWS: the server may verify it and count the
        /// report as from an install the App Store vouches for.
        var appTransaction: String?
    }

    private static func encode(_ report: WireReport) throws(CatalogClientError) -> Data {
        do { return try JSONEncoder().encode(report) } catch {
            throw CatalogClientError(code: .storage, message: "cannot encode a report: \(error)")
        }
    }

    /// A random id made once per install and kept with the queue: it lets the server count distinct
    /// installs, and is derived from nothing about the device or its user. 128 random bits in
    /// base64url, within the server's `[A-Za-z0-9_-]{1,64}`.
    private func installIdentifier() throws(CatalogClientError) -> String {
        if let installID { return installID }
        let file = configuration.dataDirectory.appendingPathComponent("install-id")
        if let stored = try? String(contentsOf: file, encoding: .utf8),
            !stored.isEmpty, stored.count <= 64, stored.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "-" || $0 == "_") })
        {
            installID = stored
            return stored
        }
        var generator = SystemRandomNumberGenerator()
        let bytes = (0..<16).map { _ in UInt8.random(in: .min ... .max, using: &generator) }
        let made = Data(bytes).base64EncodedString()
            .replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "=", with: "")
        try DurableFile.makeDirectory(configuration.dataDirectory)
        try DurableFile.write(Data(made.utf8), to: file)
        installID = made
        return made
    }

    /// Queued report files, oldest first.
    private func queuedFiles() -> [URL] { DurableFile.queued(in: directory) }

    /// Drops the oldest reports beyond the queue's limit.
    private func trimQueue() {
        for _ in DurableFile.trimQueue(in: directory, keeping: configuration.maximumQueuedReports) {
            configuration.log("report dropped: the queue holds at most \(configuration.maximumQueuedReports)")
        }
    }

    // MARK: Sending

    /// Resumes sending what an earlier process queued, when sending is automatic.
    func resume() {
        if configuration.sendsReportsAutomatically && !queuedFiles().isEmpty { startSending() }
    }

    var queueIsEmpty: Bool { queuedFiles().isEmpty }

    func sendRound() async -> ReportDelivery {
        var delivery = ReportDelivery()
        if let notBefore = sendAfter(), Date() < notBefore {
            delivery.pending = queuedFiles().count
            delivery.nextAttempt = notBefore
            return delivery
        }
        for file in queuedFiles() {
            guard let body = try? Data(contentsOf: file), let age = Self.age(of: file) else {
                drop(file, because: "unreadable", into: &delivery)
                continue
            }
            if age > configuration.maximumReportAge {
                drop(file, because: "older than \(Int(configuration.maximumReportAge)) seconds", into: &delivery)
                continue
            }
            var request = URLRequest(url: configuration.reportURL)
            request.httpMethod = "POST"
            request.setValue("application/json", forHTTPHeaderField: "Content-Type")
            request.httpBody = body
            let error: CatalogClientError
            switch await transport.send(request) {
            case .success(let answer) where (200..<300).contains(answer.status):
                delivery.sent += 1
                failures = 0
                setSendAfter(nil)
                do {
                    try FileManager.default.removeItem(at: file)
                    continue
                } catch let removal {
                    // A report that cannot leave the queue would be sent round after round (the
                    // server keeps one copy, but the device pays each time): back off instead.
                    error = CatalogClientError(code: .storage, message: "cannot remove \(file.lastPathComponent): \(removal)")
                }
            case .success(let answer) where [404, 405].contains(answer.status) && !CatalogClient.isServiceError(answer):
                error = CatalogClientError(
                    code: .noReportEndpoint,
                    message:
                        "\(configuration.reportURL.absoluteString) answered \(answer.status) without catalog serve's error: a static host or CDN cannot take reports; set Configuration.reportServer to a catalog serve (reports stay queued)",
                    status: answer.status)
                if !saidNoEndpoint {
                    saidNoEndpoint = true
                    configuration.log(error.message)
                }
            case .success(let answer):
                error = CatalogClient.unexpected(answer)
            case .failure(let failure):
                error = failure
            }
            // Nowhere to send to is no reason to lose reports: they wait, like during an outage.
            if error.isRetryable || error.code == .storage || error.code == .noReportEndpoint {
                // Stop the round: the next report would meet the same limit or outage.
                let wait = min(error.retryAfter ?? configuration.reportBackoff.delay(retry: failures), 24 * 3600)
                failures += 1
                delivery.nextAttempt = Self.wholeMilliseconds(Date().addingTimeInterval(wait))
                delivery.error = error
                setSendAfter(delivery.nextAttempt)
                break
            }
            // The server will refuse this report however often it is sent.
            drop(file, because: "refused: \(error.message)", into: &delivery)
            delivery.error = error
        }
        delivery.pending = queuedFiles().count
        return delivery
    }

    private func drop(_ file: URL, because reason: String, into delivery: inout ReportDelivery) {
        try? FileManager.default.removeItem(at: file)
        delivery.dropped += 1
        configuration.log("report \(file.lastPathComponent) dropped: \(reason)")
    }

    /// How long ago a queue file was written, from the milliseconds at the start of its name.
    private static func age(of file: URL) -> TimeInterval? {
        guard let milliseconds = Double(file.lastPathComponent.prefix { $0 != "-" }) else { return nil }
        return Date().timeIntervalSince1970 - milliseconds / 1000
    }

    private func sendAfter() -> Date? {
        guard let text = try? String(contentsOf: waitFile, encoding: .utf8), let milliseconds = Int64(text) else { return nil }
        return Self.date(milliseconds: milliseconds)
    }

    /// Whole milliseconds since 1970: what the file holds, so that the moment a round reports and the
    /// one a relaunched app reads back are the same `Date`.
    private static func wholeMilliseconds(_ moment: Date) -> Date {
        date(milliseconds: Int64((moment.timeIntervalSince1970 * 1000).rounded(.up)))
    }

    private static func date(milliseconds: Int64) -> Date {
        Date(timeIntervalSince1970: Double(milliseconds) / 1000)
    }

    private func setSendAfter(_ moment: Date?) {
        guard let moment else {
            try? FileManager.default.removeItem(at: waitFile)
            return
        }
        let milliseconds = Int64((moment.timeIntervalSince1970 * 1000).rounded())
        do { try DurableFile.write(Data(String(milliseconds).utf8), to: waitFile) } catch {
            configuration.log("report back-off not saved: \(error)")
        }
    }
}
