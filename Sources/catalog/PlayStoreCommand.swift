import ArgumentParser
import Foundation
import GooglePlay
import Ledger

/// `catalog playstore`: Google Play's evidence, checked offline from the terminal (docs/google-play.md).
struct PlayStoreCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "playstore",
        abstract: "Check Google Play's evidence offline: purchases, push tokens, keys.",
        subcommands: [PlayVerifyPurchaseCommand.self, PlayVerifyTokenCommand.self, PlayKeyCommand.self]
    )

    /// Prints the verdict `check` gives each file as a line of JSON (a refusal's reason, or the
    /// fields it answers), and exits 1 when any is invalid. `check` throws only when it cannot read.
    static func verdicts(_ files: [String], _ check: (String) throws -> Result<[String: String], any Error>) throws {
        var valid = true
        for file in files {
            var line: [String: String] = ["file": file]
            switch try check(file) {
            case .success(let fields):
                line["verdict"] = "valid"
                line.merge(fields) { $1 }
            case .failure(let refusal):
                line["verdict"] = "invalid"
                line["reason"] = "\(refusal)"
                valid = false
            }
            let data = (try? JSONSerialization.data(withJSONObject: line, options: [.sortedKeys, .withoutEscapingSlashes])) ?? Data()
            print(String(decoding: data, as: UTF8.self))
        }
        if !valid { throw ExitCode(1) }
    }

    static func read(_ path: String) throws -> Data {
        guard let data = FileManager.default.contents(atPath: path) else {
            printError("cannot read \(path)")
            throw ExitCode(2)
        }
        return data
    }
}

/// `catalog playstore verify-purchase`: `originalJson` files and their signatures, by a licence key.
struct PlayVerifyPurchaseCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "verify-purchase",
        abstract: "Verify purchases (originalJson and signature) by the app's licence key.",
        discussion: """
            Each FILE holds one originalJson, exactly as the app received it; its signature (base64) is \
            in the file of the same name ending in .sig. Prints a line of JSON per file (verdict, and for \
            a valid one whether it grants: a pending purchase does not). Exit status 0 when every one is \
            valid, 1 otherwise, 2 when the key cannot be used.
            """
    )

    @Option(help: "The app's package name.")
    var package: String

    @Option(help: ArgumentHelp("The licence key from Play Console (base64 of its SubjectPublicKeyInfo) in a file.", valueName: "file"))
    var key: String

    @Argument(help: "The originalJson files.")
    var files: [String]

    func run() async throws {
        let licence: PlayLicenseKey
        do {
            licence = try PlayLicenseKey(base64: String(decoding: try PlayStoreCommand.read(key), as: UTF8.self))
        } catch let error as PlayConfigurationError {
            printError("\(key): \(error)")
            throw ExitCode(2)
        }
        let verifier = PlayPurchaseVerifier(packageName: package, key: licence)
        try PlayStoreCommand.verdicts(files) { file in
            let json = [UInt8](try PlayStoreCommand.read(file))
            let signature = String(decoding: try PlayStoreCommand.read((file as NSString).deletingPathExtension + ".sig"), as: UTF8.self)
            return Result {
                let purchase = try verifier.verify(originalJson: json, signature: signature)
                return [
                    "grant": purchase.state == .purchased ? "yes" : "no", "productId": purchase.productId ?? "",
                    "purchaseToken": purchase.purchaseToken ?? "",
                ]
            }
        }
    }
}

/// `catalog playstore verify-token`: Pub/Sub push tokens, by Google's keys.
struct PlayVerifyTokenCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "verify-token",
        abstract: "Verify Pub/Sub push tokens (the Authorization of a Play notification) by Google's keys.",
        discussion: """
            Each FILE holds one compact JWT. Exit status 0 when every one is valid, 1 otherwise, 2 when \
            the key set cannot be used.
            """
    )

    @Option(help: ArgumentHelp("Google's keys, a JWKS (https://www.googleapis.com/oauth2/v3/certs) in a file.", valueName: "file"))
    var jwks: String

    @Option(help: "The push subscription's audience.")
    var audience: String

    @Option(help: "The push subscription's service account.")
    var serviceAccount: String

    @Option(help: ArgumentHelp("The moment to check at, seconds since 1970. Default: now.", valueName: "seconds"))
    var at: Double?

    @Argument(help: "The token files.")
    var files: [String]

    func run() async throws {
        let keys: GoogleKeySet
        do {
            keys = try GoogleKeySet(json: try PlayStoreCommand.read(jwks))
        } catch let error as PlayConfigurationError {
            printError("\(jwks): \(error)")
            throw ExitCode(2)
        }
        let verifier = PushTokenVerifier(audience: audience, serviceAccount: serviceAccount, keys: keys)
        let now = at.map { Date(timeIntervalSince1970: $0) } ?? Date()
        try PlayStoreCommand.verdicts(files) { file in
            let token = String(decoding: try PlayStoreCommand.read(file), as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
            return Result {
                try verifier.verify(token, now: now)
                return [:]
            }
        }
    }
}

/// `catalog playstore key`: whether a licence key or a key set can be used.
struct PlayKeyCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "key",
        abstract: "Check licence keys (or, with --jwks, key sets): RSA of at least 2048 bits.",
        discussion: "Prints a line of JSON per file. Exit status 0 when every one can be used, 1 otherwise."
    )

    @Flag(help: "The files are JWKS key sets, not licence keys.")
    var jwks = false

    @Argument(help: "The key files.")
    var files: [String]

    func run() async throws {
        try PlayStoreCommand.verdicts(files) { file in
            let data = try PlayStoreCommand.read(file)
            return Result {
                if jwks { return ["kids": try GoogleKeySet(json: data).keyIds.joined(separator: " ")] }
                _ = try PlayLicenseKey(base64: String(decoding: data, as: UTF8.self))
                return [:]
            }
        }
    }
}
