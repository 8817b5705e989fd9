import AppStore
import AppStoreTestSupport
import Foundation
import Ledger
import Testing

/// Legacy app receipts, PKCS#7 made by openssl the way the App Store and Xcode write them.
@Suite struct ReceiptVerificationTests {
    typealias PKI = AppStoreTestPKI
    static let app = SignedDataVerifierTests.app
    static let device: [UInt8] = Array(repeating: 7, count: 16)

    @Test(arguments: [(false, false), (true, false), (false, true), (true, true)])
    func aGenuineReceiptIsAcceptedWithEveryInAppEntry(sha1: Bool, ber: Bool) async throws {
        let pki = try await PKI.rsa(sha1: sha1)
        let verifier = SignedDataVerifier(trust: pki.trust, app: Self.app)
        let receipt = try await verifier.verifyAndDecodeReceipt(
            try await TestReceipts.signed(TestReceipts.payload(), by: pki, sha1: sha1, ber: ber), deviceIdentifier: Self.device)
        #expect(receipt.bundleId == "com.example.app")
        #expect(receipt.environment == .production)
        #expect(receipt.receiptCreationDate == PKI.date(2025))
        #expect(receipt.inApp.map(\.productId) == ["com.example.app.lifetime", "com.example.app.pro.monthly"])
        #expect(receipt.inApp[1].subscriptionExpirationDate == PKI.date(2025, 1, 15).addingTimeInterval(36_000))
        #expect(receipt.inApp[0].cancellationDate == nil)
    }

    @Test func theEnvelopeIsBERWhenStreamed() async throws {
        let pki = try await PKI.rsa()
        let ber = try await TestReceipts.signed(TestReceipts.payload(), by: pki, ber: true)
        // 0x30 0x80: a SEQUENCE of indefinite length, which DER forbids.
        #expect(Array(ber.prefix(2)) == [0x30, 0x80])
    }

    @Test func aBase64ReceiptIsReadAsAppsSendIt() async throws {
        let pki = try await PKI.rsa()
        let verifier = SignedDataVerifier(trust: pki.trust, app: Self.app)
        let der = try await TestReceipts.signed(TestReceipts.payload(), by: pki)
        let receipt = try await verifier.verifyAndDecodeReceipt(Array(Data(der).base64EncodedString().utf8))
        #expect(receipt.inApp.count == 2)
    }

    @Test func aChangedByteOfTheContentIsRefused() async throws {
        let pki = try await PKI.rsa()
        let verifier = SignedDataVerifier(trust: pki.trust, app: Self.app)
        var receipt = try await TestReceipts.signed(TestReceipts.payload(), by: pki)
        // Move the lifetime purchase's date: "2024-12-01" becomes "2034-12-01".
        let needle = Array("2024-12-01".utf8)
        let at = try #require((0...(receipt.count - needle.count)).first { Array(receipt[$0..<$0 + needle.count]) == needle })
        receipt[at + 2] = UInt8(ascii: "3")
        let refusal = await SignedDataVerifierTests.refusal { _ = try await verifier.verifyAndDecodeReceipt(receipt) }
        #expect(refusal?.code == .notAuthenticated)
        #expect(refusal?.reason.contains("signature does not verify") == true)
    }

    @Test func aReceiptFromAnotherRootOrWithoutMarkersIsRefused() async throws {
        let trusted = try await PKI.rsa()
        // Another root.
        let impostor = try await PKI.rsa()
        let verifier = SignedDataVerifier(trust: trusted.trust, app: Self.app)
        let foreign = await SignedDataVerifierTests.refusal {
            _ = try await verifier.verifyAndDecodeReceipt(try await TestReceipts.signed(TestReceipts.payload(), by: impostor))
        }
        #expect(foreign?.code == .notAuthenticated)
        // Markers: each PKI trusted, only its marker missing.
        for pki in [try await PKI.rsa(leafMarker: false), try await PKI.rsa(intermediateMarker: false)] {
            let own = SignedDataVerifier(trust: pki.trust, app: Self.app)
            let refusal = await SignedDataVerifierTests.refusal {
                _ = try await own.verifyAndDecodeReceipt(try await TestReceipts.signed(TestReceipts.payload(), by: pki))
            }
            #expect(refusal?.code == .notAuthenticated)
            #expect(refusal?.reason.contains("marker") == true)
        }
    }

    @Test func theChainIsCheckedAtTheReceiptsCreationDate() async throws {
        let pki = try await PKI.rsa(leafValidity: PKI.date(2019)...PKI.date(2021))
        let verifier = SignedDataVerifier(trust: pki.trust, app: Self.app)
        let old = try await verifier.verifyAndDecodeReceipt(
            try await TestReceipts.signed(TestReceipts.payload(creationDate: "2020-06-01T00:00:00Z"), by: pki))
        #expect(old.receiptCreationDate == PKI.date(2020, 6))
        let late = await SignedDataVerifierTests.refusal {
            _ = try await verifier.verifyAndDecodeReceipt(
                try await TestReceipts.signed(TestReceipts.payload(creationDate: "2022-01-01T00:00:00Z"), by: pki))
        }
        #expect(late?.code == .notAuthenticated)
        #expect(late?.reason.contains("expired") == true)
    }

    @Test func theDeviceHashMustMatchTheDeviceIdentifierWhenOneIsGiven() async throws {
        let pki = try await PKI.rsa()
        let verifier = SignedDataVerifier(trust: pki.trust, app: Self.app)
        let receipt = try await TestReceipts.signed(TestReceipts.payload(), by: pki)
        _ = try await verifier.verifyAndDecodeReceipt(receipt, deviceIdentifier: Self.device)
        _ = try await verifier.verifyAndDecodeReceipt(receipt)
        let other = await SignedDataVerifierTests.refusal {
            _ = try await verifier.verifyAndDecodeReceipt(receipt, deviceIdentifier: Array(repeating: 8, count: 16))
        }
        #expect(other?.code == .notAuthenticated)
        #expect(other?.reason.contains("device hash") == true)
    }

    @Test func aReceiptOfAnotherAppOrEnvironmentIsRefused() async throws {
        let pki = try await PKI.rsa()
        let productionOnly = SignedDataVerifier(
            trust: pki.trust, app: AppStoreApp(bundleId: "com.example.app", appAppleId: 1_234_567_890, environments: [.production]))
        let otherBundle = await SignedDataVerifierTests.refusal {
            _ = try await productionOnly.verifyAndDecodeReceipt(
                try await TestReceipts.signed(TestReceipts.payload(bundleId: "com.other.app"), by: pki))
        }
        #expect(otherBundle?.code == .wrongApp)
        let otherAppleId = await SignedDataVerifierTests.refusal {
            _ = try await productionOnly.verifyAndDecodeReceipt(try await TestReceipts.signed(TestReceipts.payload(appItemId: 5), by: pki))
        }
        #expect(otherAppleId?.code == .wrongApp)
        let sandbox = await SignedDataVerifierTests.refusal {
            _ = try await productionOnly.verifyAndDecodeReceipt(
                try await TestReceipts.signed(TestReceipts.payload(environment: "ProductionSandbox", appItemId: 0), by: pki))
        }
        #expect(sandbox?.code == .sandboxEvidence)
    }

    @Test func anXcodeReceiptIsAcceptedOnlyWithItsCertificateNamed() async throws {
        let apple = try await PKI.rsa()
        let xcode = try PKI.xcode(rsa: true)
        let receipt = try await TestReceipts.sign(
            TestReceipts.payload(environment: "Xcode", appItemId: 0, creationDate: "2025-01-01T02:00:00+0200"),
            certificate: xcode.certificate,
            keyPEM: xcode.keyPEM, chain: [], ber: true)
        let byDefault = SignedDataVerifier(trust: apple.trust, app: Self.app)
        let refusal = await SignedDataVerifierTests.refusal { _ = try await byDefault.verifyAndDecodeReceipt(receipt) }
        #expect(refusal?.code == .notAuthenticated)
        var settings = Self.app
        settings.xcodeCertificate = xcode.certificate
        let named = try await SignedDataVerifier(trust: apple.trust, app: settings).verifyAndDecodeReceipt(receipt)
        #expect(named.environment == .xcode)
        #expect(named.receiptCreationDate == PKI.date(2025))
    }

    @Test(arguments: [Array("NOT A RECEIPT".utf8), [0x30, 0x03, 0x02, 0x01, 0x01], []])
    func somethingElseIsMalformed(bytes: [UInt8]) async throws {
        let verifier = SignedDataVerifier(trust: try await PKI.rsa().trust, app: Self.app)
        let refusal = await SignedDataVerifierTests.refusal { _ = try await verifier.verifyAndDecodeReceipt(bytes) }
        #expect(refusal?.code == .malformed)
    }
}
