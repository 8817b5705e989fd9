import AppStore
import AppStoreTestSupport
import Foundation
import Ledger
import Testing

/// `catalog purchases sign`: evidence signed as Xcode's StoreKit testing signs it, with the
/// developer's own certificate, that `catalog purchases verify` (and the server) accept only with that
/// certificate named, and only for the Xcode environment.
@Suite struct PurchasesSignCommandTests {
    typealias PKI = AppStoreTestSupport.AppStoreTestPKI

    @Test func signsXcodeEvidenceOnly() async throws {
        try await CommandTests.withWorkspace { workspace in
            let (certificate, keyPEM, _) = try PKI.xcode()
            try workspace.write("xcode.key", keyPEM)
            try workspace.write("xcode.cer", PKI.pem(certificate))
            let fields =
                #""transactionId":"0","originalTransactionId":"0","bundleId":"com.example.app","productId":"pro","type":"Non-Consumable","purchaseDate":1735689600000,"signedDate":1735689600000,"quantity":1"#
            try workspace.write("xcode.json", "{\(fields),\"environment\":\"Xcode\"}")
            try workspace.write("production.json", "{\(fields),\"environment\":\"Production\"}")
            let signed = try await workspace.run("purchases", "sign", "--key", "xcode.key", "--certificate", "xcode.cer", "xcode.json")
            #expect(signed.status == 0, "\(signed.stderr)")
            try workspace.write("t.jws", signed.stdout.trimmingCharacters(in: .whitespacesAndNewlines))
            let named = try await workspace.run("purchases", "verify", "--xcode-certificate", "xcode.cer", "t.jws")
            #expect(named.status == 0, "\(named.stdout)")
            #expect(named.stdout.contains(#""verdict":"valid""#) && named.stdout.contains(#""environment":"Xcode""#))
            #expect(try await workspace.run("purchases", "verify", "t.jws").status == 1, "never without the certificate named")

            let production = try await workspace.run(
                "purchases", "sign", "--key", "xcode.key", "--certificate", "xcode.cer", "production.json")
            #expect(production.status != 0)
            #expect(production.stderr.contains("must say Xcode"), "\(production.stderr)")
            let (other, _, _) = try PKI.xcode()
            try workspace.write("other.cer", PKI.pem(other))
            let mismatched = try await workspace.run("purchases", "sign", "--key", "xcode.key", "--certificate", "other.cer", "xcode.json")
            #expect(mismatched.status != 0)
            #expect(mismatched.stderr.contains("is not the certificate of --key's key"), "\(mismatched.stderr)")
        }
    }
}
