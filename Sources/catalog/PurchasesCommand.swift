import ArgumentParser
import Foundation
import Purchases

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
            originalTransactionId, signedDate, notificationType and subtype. Exit status: 0 when every file is valid, 1 otherwise, \
            64 on misuse. See docs/purchases.md.
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
        var lines: [VerdictLine] = []
        let clock = ContinuousClock()
        let elapsed = await clock.measure {
            for _ in 0..<(`repeat` ?? 1) {
                lines = []
                for (file, bytes) in zip(files, contents) {
                    guard let bytes else {
                        lines.append(
                            VerdictLine(file: file, kind: nil, result: .failure(PurchaseRefusal(.malformed, "cannot read the file"))))
                        continue
                    }
                    let (kind, result) = await verifier.verifyAny(bytes, deviceIdentifier: device)
                    lines.append(VerdictLine(file: file, kind: kind, result: result))
                }
            }
        }
        for line in lines { print(line.json) }
        if let rounds = `repeat` {
            let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
            FileHandle.standardError.write(Array("verified \(files.count * rounds) in \(seconds) s\n".utf8))
        }
        if lines.contains(where: { $0.verdict != "valid" }) { throw ExitCode(1) }
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

/// One file's verdict, as one JSON line with a fixed set of keys (null where nothing applies).
struct VerdictLine {
    var file: String
    var kind: String?
    var verdict: String
    var code: String?
    var status: Int?
    var reason: String?
    var environment: String?
    var bundleId: String?
    var appAppleId: Int64?
    var productId: String?
    var transactionId: String?
    var originalTransactionId: String?
    var signedDate: String?
    var notificationType: String?
    var subtype: String?

    init(file: String, kind: EvidenceKind?, result: Result<EvidenceSummary, PurchaseRefusal>) {
        self.file = file
        self.kind = kind?.rawValue
        switch result {
        case .success(let summary):
            verdict = "valid"
            environment = summary.environment?.rawValue
            bundleId = summary.bundleId
            appAppleId = summary.appAppleId
            productId = summary.productId
            transactionId = summary.transactionId
            originalTransactionId = summary.originalTransactionId
            signedDate = summary.signedDate.map { $0.formatted(Date.ISO8601FormatStyle(includingFractionalSeconds: true)) }
            notificationType = summary.notificationType?.rawValue
            subtype = summary.subtype?.rawValue
        case .failure(let refusal):
            verdict = "invalid"
            code = refusal.code.rawValue
            status = refusal.code.appleStatus
            reason = refusal.reason
        }
    }

    /// The line, its keys always in the same order (JSONEncoder's order is not fixed on every platform).
    var json: String {
        let fields: [(String, String?)] = [
            ("file", file), ("kind", kind), ("verdict", verdict), ("code", code), ("status", status.map(String.init)), ("reason", reason),
            ("environment", environment), ("bundleId", bundleId), ("appAppleId", appAppleId.map(String.init)), ("productId", productId),
            ("transactionId", transactionId),
            ("originalTransactionId", originalTransactionId), ("signedDate", signedDate), ("notificationType", notificationType),
            ("subtype", subtype),
        ]
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.withoutEscapingSlashes]
        func quoted(_ text: String) -> String {
            (try? encoder.encode(text)).map { String(decoding: $0, as: UTF8.self) } ?? "null"
        }
        let body = fields.map { key, value in
            "\"\(key)\":" + (value.map { ["status", "appAppleId"].contains(key) ? $0 : quoted($0) } ?? "null")
        }
        return "{" + body.joined(separator: ",") + "}"
    }
}
