import AppStore
import ArgumentParser
import Crypto
import FeedSigning
import Foundation
import Ledger
import SwiftASN1
import X509

/// `catalog purchases sign`: signs a payload as Xcode's StoreKit testing does, with the developer's
/// own certificate, so that a backend can be tried end to end where Xcode does not run (a Linux CI,
/// the first-paid-app guide). The server accepts such evidence only for an app whose settings name
/// that certificate (`xcodeCertificate`), and only when it says `Xcode` (docs/purchases.md, "Environments").
struct PurchasesSignCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "sign",
        abstract: "Sign a transaction or AppTransaction payload as Xcode's StoreKit testing does, and print the JWS.",
        discussion: """
            Reads the payload (JSON with Apple's field names, dates in milliseconds) from FILE, or from \
            standard input with -, and prints a compact JWS: ES256 with the private key of --key, the \
            certificate of --certificate alone in x5c, as Xcode signs StoreKit testing purchases with the \
            certificate it makes. The payload must say Xcode (environment, or receiptType for an \
            AppTransaction): no other environment is ever signed this way. See docs/first-paid-app.md.
            """
    )

    @Option(help: ArgumentHelp("The P-256 private key (PEM, SEC 1 or PKCS #8).", valueName: "file"))
    var key: String

    @Option(help: ArgumentHelp("Its certificate (PEM or DER), the one the app's xcodeCertificate names.", valueName: "file"))
    var certificate: String

    @Argument(help: ArgumentHelp("The payload's JSON file, or - for standard input.", valueName: "file"))
    var payload: String

    func run() throws {
        let signingKey: P256.Signing.PrivateKey
        do {
            signingKey = try P256.Signing.PrivateKey(pemRepresentation: try String(contentsOfFile: key, encoding: .utf8))
        } catch {
            throw ValidationError("--key \(key) is not a P-256 private key in PEM: \(error)")
        }
        let certificates: [Certificate]
        do {
            certificates = try PurchaseTrust.certificates(fromFiles: [certificate])
        } catch {
            throw ValidationError("--certificate: \(error)")
        }
        guard let signer = certificates.first, certificates.count == 1 else {
            throw ValidationError("--certificate \(certificate) must hold exactly one certificate")
        }
        guard P256.Signing.PublicKey(signer.publicKey)?.rawRepresentation == signingKey.publicKey.rawRepresentation else {
            throw ValidationError("--certificate \(certificate) is not the certificate of --key's key")
        }
        let bytes: Data
        if payload == "-" {
            bytes = FileHandle.standardInput.readDataToEndOfFile()
        } else {
            guard let read = FileManager.default.contents(atPath: payload) else { throw ValidationError("cannot read \(payload)") }
            bytes = read
        }
        guard let object = try? JSONSerialization.jsonObject(with: bytes) as? [String: Any] else {
            throw ValidationError("\(payload) is not a JSON object")
        }
        guard (object["environment"] ?? object["receiptType"]) as? String == "Xcode" else {
            throw ValidationError("the payload must say Xcode (environment, or receiptType): only StoreKit testing evidence is signed here")
        }
        var serializer = DER.Serializer()
        try serializer.serialize(signer)
        let header = try JSONSerialization.data(
            withJSONObject: ["alg": "ES256", "x5c": [Data(serializer.serializedBytes).base64EncodedString()]], options: [.sortedKeys])
        let compact = try JSONSerialization.data(withJSONObject: object, options: [.sortedKeys, .withoutEscapingSlashes])
        let input = Base64URL.encode(Array(header)) + "." + Base64URL.encode(Array(compact))
        let signature = try signingKey.signature(for: Data(input.utf8))
        print(input + "." + Base64URL.encode(Array(signature.rawRepresentation)))
    }
}
