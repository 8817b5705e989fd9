import AppStore
import ArgumentParser
import Foundation
import Ledger

/// `catalog purchases`: App Store evidence from the terminal.
struct PurchasesCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "purchases",
        abstract: "Work with App Store purchase evidence.",
        subcommands: [PurchasesVerifyCommand.self, PurchasesRebuildCommand.self, PurchasesSignCommand.self]
    )
}

/// `catalog purchases verify`: what the server checks, file by file, as a support tool would.
struct PurchasesVerifyCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "verify",
        abstract: "Verify App Store evidence offline and print one JSON line per file.",
        discussion: """
            Reads signed transactions, renewal infos, AppTransactions, notifications (the bare JWS or \
            the {"signedPayload": …} body) and legacy app receipts (DER or base64). Each is checked against \
            Apple's roots (pinned in the program) at its own signing date: ES256, the x5c chain, Apple's \
            marker OIDs, the signature; a receipt's PKCS#7 signature and chain. Without --app, \
            --app-apple-id or --environment it binds the evidence to no app and prints what it names. \
            Each line holds file, kind, verdict (valid or invalid), code and status (Apple's old status \
            where one fits), reason, environment, bundleId, appAppleId, productId, transactionId, \
            originalTransactionId, signedDate, notificationType, subtype and, for a receipt, inApp (every \
            in-app entry); a refused file that decodes still names what it claims, unverified. Dates are \
            UTC to the millisecond. Exit status: 0 when every file is valid, 1 otherwise, 64 on misuse. \
            See docs/purchases.md.
            """
    )

    @Option(help: ArgumentHelp("The bundle id the evidence must name. Default: any.", valueName: "bundle"))
    var app: String?

    @Option(
        help: ArgumentHelp(
            "The app's Apple id, which production evidence that names one must match. Default: none; then, with --app, such evidence is refused.",
            valueName: "n"))
    var appAppleId: Int64?

    @Option(
        help: ArgumentHelp(
            "An environment accepted: Production or Sandbox; repeatable. Default: both.", valueName: "environment"))
    var environment: [String] = []

    @Option(help: ArgumentHelp("Another trusted root certificate (PEM or DER); repeatable. Default: Apple's two only.", valueName: "file"))
    var rootCertificate: [String] = []

    @Option(
        help: ArgumentHelp(
            "The certificate exported from Xcode that signs StoreKit testing evidence. Default: none, Xcode evidence is refused.",
            valueName: "file"))
    var xcodeCertificate: String?

    @Option(
        help: ArgumentHelp(
            "The device identifier receipts' hash must match: hex (a UUID's dashes and a MAC's colons allowed). Default: not checked.",
            valueName: "id"))
    var deviceId: String?

    @Option(
        help: ArgumentHelp(
            "Verify the files this many times and print the rate to standard error (scripts/bench-purchases).", visibility: .hidden))
    var `repeat`: Int?

    @Option(help: ArgumentHelp("How many verified chains to keep; 0 validates every chain (scripts/bench-purchases).", visibility: .hidden))
    var chainCacheSize: Int = 32

    @Argument(help: "The evidence files.")
    var files: [String]

    func validate() throws {
        guard !files.isEmpty else { throw ValidationError("give at least one evidence file") }
        for name in environment where !["Production", "Sandbox"].contains(name) {
            throw ValidationError("--environment is Production or Sandbox, not \(name)")
        }
        guard (`repeat` ?? 1) >= 1, chainCacheSize >= 0 else {
            throw ValidationError("--repeat is at least 1, --chain-cache-size at least 0")
        }
        if let deviceId, Self.bytes(hex: deviceId) == nil {
            throw ValidationError("--device-id must be hex (e.g. a UUID or a MAC address), not \(deviceId)")
        }
    }

    func run() async throws {
        let verifier: SignedDataVerifier
        do {
            var trust = try PurchaseTrust.apple()
            trust = trust.adding(try PurchaseTrust.certificates(fromFiles: rootCertificate))
            let xcode = try xcodeCertificate.map { try PurchaseTrust.certificates(fromFiles: [$0]) }
            if let xcode, xcode.count != 1 {
                throw PurchaseConfigurationError("\(xcodeCertificate ?? "") must hold exactly one certificate")
            }
            let environments = environment.isEmpty ? [.production, .sandbox] : Set(environment.map(AppStoreEnvironment.init(rawValue:)))
            verifier = SignedDataVerifier(
                trust: trust,
                app: AppStoreApp(bundleId: app, appAppleId: appAppleId, environments: environments, xcodeCertificate: xcode?.first),
                cacheCapacity: chainCacheSize)
        } catch let error as PurchaseConfigurationError {
            printError("error: \(error)")
            throw ExitCode(64)
        }
        let device = deviceId.flatMap(Self.bytes(hex:))
        let contents = files.map { FileManager.default.contents(atPath: $0).map { [UInt8]($0) } }
        var verdicts: [(kind: EvidenceKind?, result: Result<EvidenceSummary, PurchaseRefusal>)] = []
        let clock = ContinuousClock()
        let elapsed = await clock.measure {
            for _ in 0..<(`repeat` ?? 1) {
                verdicts = []
                for bytes in contents {
                    guard let bytes else {
                        verdicts.append((nil, .failure(PurchaseRefusal(.malformed, "cannot read the file"))))
                        continue
                    }
                    verdicts.append(await verifier.verifyAny(bytes, deviceIdentifier: device))
                }
            }
        }
        // What refused evidence claims is decoded once, outside the timed rounds.
        for ((file, bytes), verdict) in zip(zip(files, contents), verdicts) {
            var claimed: EvidenceSummary?
            if case .failure = verdict.result, let bytes, let kind = verdict.kind {
                claimed = EvidenceSummary.unverified(bytes, kind: kind)
            }
            print(VerdictLine(file: file, kind: verdict.kind, result: verdict.result, claimed: claimed).json)
        }
        if let rounds = `repeat` {
            let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
            FileHandle.standardError.write(Array("verified \(files.count * rounds) in \(seconds) s\n".utf8))
        }
        if verdicts.contains(where: { if case .failure = $0.result { true } else { false } }) { throw ExitCode(1) }
    }

    /// Hex to bytes, ignoring the dashes of a UUID and the colons of a MAC address.
    static func bytes(hex: String) -> [UInt8]? {
        let digits = Array(hex.filter { $0 != "-" && $0 != ":" }.utf8)
        guard !digits.isEmpty, digits.count % 2 == 0 else { return nil }
        var bytes: [UInt8] = []
        for index in stride(from: 0, to: digits.count, by: 2) {
            guard let byte = UInt8(String(decoding: digits[index...index + 1], as: UTF8.self), radix: 16) else { return nil }
            bytes.append(byte)
        }
        return bytes
    }
}

/// One file's verdict, as one JSON line with a fixed set of keys (null where nothing applies). A
/// refused file's fields are what it claims, decoded without trusting it, when it decodes.
struct VerdictLine {
    var file: String
    var kind: String?
    var verdict: String
    var code: String?
    var status: Int?
    var reason: String?
    var summary: EvidenceSummary?

    init(file: String, kind: EvidenceKind?, result: Result<EvidenceSummary, PurchaseRefusal>, claimed: EvidenceSummary? = nil) {
        self.file = file
        self.kind = kind?.rawValue
        switch result {
        case .success(let verified):
            verdict = "valid"
            summary = verified
        case .failure(let refusal):
            verdict = "invalid"
            code = refusal.code.rawValue
            status = refusal.code.appleStatus
            reason = refusal.reason
            summary = claimed
        }
    }

    /// The line, its keys always in the same order (JSONEncoder's order is not fixed on every platform);
    /// keys added later come last, so that a reader of the older lines keeps working.
    var json: String {
        Self.object([
            ("file", Self.string(file)), ("kind", Self.string(kind)), ("verdict", Self.string(verdict)), ("code", Self.string(code)),
            ("status", status.map(String.init)), ("reason", Self.string(reason)),
            ("environment", Self.string(summary?.environment?.rawValue)), ("bundleId", Self.string(summary?.bundleId)),
            ("appAppleId", summary?.appAppleId.map(String.init)), ("productId", Self.string(summary?.productId)),
            ("transactionId", Self.string(summary?.transactionId)),
            ("originalTransactionId", Self.string(summary?.originalTransactionId)), ("signedDate", Self.date(summary?.signedDate)),
            ("notificationType", Self.string(summary?.notificationType?.rawValue)), ("subtype", Self.string(summary?.subtype?.rawValue)),
            ("inApp", summary?.inApp.map { "[" + $0.map(Self.entry).joined(separator: ",") + "]" }),
        ])
    }

    /// One in-app entry of a receipt.
    static func entry(_ entry: AppReceipt.InAppPurchase) -> String {
        object([
            ("productId", string(entry.productId)), ("transactionId", string(entry.transactionId)),
            ("originalTransactionId", string(entry.originalTransactionId)), ("purchaseDate", date(entry.purchaseDate)),
            ("expiresDate", date(entry.subscriptionExpirationDate)), ("cancellationDate", date(entry.cancellationDate)),
            ("quantity", entry.quantity.map(String.init)),
        ])
    }

    /// `{"key":value,…}` in the order given, each value JSON already, null for nil.
    static func object(_ fields: [(String, String?)]) -> String {
        "{" + fields.map { "\"\($0.0)\":" + ($0.1 ?? "null") }.joined(separator: ",") + "}"
    }

    static func string(_ text: String?) -> String? {
        guard let text else { return nil }
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.withoutEscapingSlashes]
        return (try? encoder.encode(text)).map { String(decoding: $0, as: UTF8.self) } ?? "null"
    }

    /// UTC to the millisecond, as Apple signs dates.
    static func date(_ date: Date?) -> String? {
        string(date.map(RFC3339.format))
    }
}
