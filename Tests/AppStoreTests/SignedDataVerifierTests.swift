import AppStore
import AppStoreTestSupport
import Crypto
import Foundation
import Ledger
import Testing
import X509

/// Every check a StoreKit 2 JWS passes, each with evidence that passes and an attack that must not.
@Suite struct SignedDataVerifierTests {
    typealias PKI = AppStoreTestPKI
    static let app = AppStoreApp(bundleId: "com.example.app", appAppleId: 1_234_567_890)

    static func refusal(_ body: () async throws -> Void) async -> PurchaseRefusal? {
        do {
            try await body()
            return nil
        } catch let refusal as PurchaseRefusal {
            return refusal
        } catch {
            return PurchaseRefusal(.malformed, "unexpected \(error)")
        }
    }

    @Test func aGenuineTransactionIsAcceptedAndItsChainCachedForTheNext() async throws {
        let pki = try PKI.ecdsa()
        let verifier = SignedDataVerifier(trust: pki.trust, app: Self.app)
        let transaction = try await verifier.verifyAndDecodeTransaction(try pki.jws(payload: PKI.transaction()))
        #expect(transaction.transactionId == "2000000000000001")
        #expect(transaction.type == .autoRenewableSubscription)
        #expect(transaction.environment == .production)
        #expect(transaction.signedDate == PKI.defaultSignedDate)
        #expect(verifier.cachedChainCount == 1)
        let second = try await verifier.verifyAndDecodeTransaction(
            try pki.jws(payload: PKI.transaction(["transactionId": "2000000000000009"])))
        #expect(second.transactionId == "2000000000000009")
        #expect(verifier.cachedChainCount == 1)
    }

    @Test func unknownEnumerationValuesAreKeptNotRefused() async throws {
        let pki = try PKI.ecdsa()
        let verifier = SignedDataVerifier(trust: pki.trust, app: Self.app)
        let transaction = try await verifier.verifyAndDecodeTransaction(
            try pki.jws(payload: PKI.transaction(["type": "Brand-New Kind", "offerType": 9, "inAppOwnershipType": "SOMEONE_ELSE"])))
        #expect(transaction.type?.rawValue == "Brand-New Kind")
        #expect(transaction.offerType?.rawValue == 9)
        #expect(transaction.inAppOwnershipType?.rawValue == "SOMEONE_ELSE")
    }

    @Test(arguments: ["none", "HS256", "ES384", "RS256"])
    func anAlgorithmOtherThanES256IsRefused(alg: String) async throws {
        let pki = try PKI.ecdsa()
        let verifier = SignedDataVerifier(trust: pki.trust, app: Self.app)
        // Signed correctly by the leaf: only the header's claim differs, as in a key-confusion attack.
        var header = pki.header
        header["alg"] = alg
        let jws = try pki.jws(header: header, payload: PKI.transaction())
        let refusal = await Self.refusal { _ = try await verifier.verifyAndDecodeTransaction(jws) }
        #expect(refusal?.code == .notAuthenticated)
        #expect(refusal?.code.appleStatus == 21003)
        #expect(refusal?.reason.contains("only ES256") == true)
    }

    @Test func anHMACKeyedWithTheLeafsPublicKeyIsRefused() async throws {
        let pki = try PKI.ecdsa()
        let verifier = SignedDataVerifier(trust: pki.trust, app: Self.app)
        var header = pki.header
        header["alg"] = "HS256"
        let input = PKI.base64URL(try PKI.json(header)) + "." + PKI.base64URL(try PKI.json(PKI.transaction()))
        let key = SymmetricKey(data: Data(PKI.pem(pki.leaf).utf8))
        let mac = HMAC<SHA256>.authenticationCode(for: Data(input.utf8), using: key)
        let refusal = await Self.refusal { _ = try await verifier.verifyAndDecodeTransaction(input + "." + PKI.base64URL(Data(mac))) }
        #expect(refusal?.code == .notAuthenticated)
    }

    @Test func aChangedPayloadOrASplicedSignatureIsRefused() async throws {
        let pki = try PKI.ecdsa()
        let verifier = SignedDataVerifier(trust: pki.trust, app: Self.app)
        let genuine = try pki.jws(payload: PKI.transaction())
        let other = try pki.jws(payload: PKI.transaction(["transactionId": "2000000000000002"]))
        let parts = genuine.split(separator: ".").map(String.init)
        let forgedPayload = PKI.base64URL(try PKI.json(PKI.transaction(["expiresDate": PKI.milliseconds(PKI.date(2099))])))
        let otherSignature = String(other.split(separator: ".")[2])
        for forged in [parts[0] + "." + forgedPayload + "." + parts[2], parts[0] + "." + parts[1] + "." + otherSignature] {
            let refusal = await Self.refusal { _ = try await verifier.verifyAndDecodeTransaction(forged) }
            #expect(refusal?.code == .notAuthenticated)
            #expect(refusal?.reason.contains("signature does not verify") == true)
        }
    }

    @Test func aChainFromAnotherRootIsRefusedEvenWithTheSameNames() async throws {
        let apple = try PKI.ecdsa()
        let impostor = try PKI.ecdsa()
        let verifier = SignedDataVerifier(trust: apple.trust, app: Self.app)
        let refusal = await Self.refusal { _ = try await verifier.verifyAndDecodeTransaction(try impostor.jws(payload: PKI.transaction())) }
        #expect(refusal?.code == .notAuthenticated)
        #expect(verifier.cachedChainCount == 0)
        // The impostor's leaf and intermediate with the trusted root appended: the root in x5c is never trusted as such.
        var header = impostor.header
        header["x5c"] = Array(impostor.x5c.prefix(2)) + [apple.x5c[2]]
        let withRealRoot = await Self.refusal {
            _ = try await verifier.verifyAndDecodeTransaction(try impostor.jws(header: header, payload: PKI.transaction()))
        }
        #expect(withRealRoot?.code == .notAuthenticated)
    }

    @Test func x5cMustBeLeafIntermediateRootInThatOrder() async throws {
        let pki = try PKI.ecdsa()
        let verifier = SignedDataVerifier(trust: pki.trust, app: Self.app)
        let x5c = pki.x5c
        for chain in [[x5c[1], x5c[0], x5c[2]], [x5c[1], x5c[1], x5c[2]], [x5c[0], x5c[1]], [x5c[0], x5c[1], x5c[2], x5c[2]], []] {
            var header = pki.header
            header["x5c"] = chain
            let refusal = await Self.refusal {
                _ = try await verifier.verifyAndDecodeTransaction(try pki.jws(header: header, payload: PKI.transaction()))
            }
            #expect(refusal?.code == .notAuthenticated, "\(chain.count) certificates")
        }
    }

    @Test(arguments: [(false, true), (true, false)])
    func appleMarkerOIDsAreRequired(leafMarker: Bool, intermediateMarker: Bool) async throws {
        let pki = try PKI.ecdsa(leafMarker: leafMarker, intermediateMarker: intermediateMarker)
        let verifier = SignedDataVerifier(trust: pki.trust, app: Self.app)
        let refusal = await Self.refusal { _ = try await verifier.verifyAndDecodeTransaction(try pki.jws(payload: PKI.transaction())) }
        #expect(refusal?.code == .notAuthenticated)
        #expect(refusal?.reason.contains(leafMarker ? "6.2.1" : "6.11.1") == true)
    }

    @Test func theChainIsCheckedAtTheSignedDateNotNow() async throws {
        // A leaf that expired in 2021: evidence it signed in 2020 is genuine; evidence "signed" in 2022 is not.
        let pki = try PKI.ecdsa(leafValidity: PKI.date(2019)...PKI.date(2021))
        let verifier = SignedDataVerifier(trust: pki.trust, app: Self.app)
        let old = try await verifier.verifyAndDecodeTransaction(
            try pki.jws(payload: PKI.transaction(["signedDate": PKI.milliseconds(PKI.date(2020, 6))])))
        #expect(old.signedDate == PKI.date(2020, 6))
        // After expiry and before validity, through the cache (the chain is already verified) and through a fresh verifier.
        for date in [PKI.date(2022), PKI.date(2018)] {
            for candidate in [verifier, SignedDataVerifier(trust: pki.trust, app: Self.app)] {
                let jws = try pki.jws(payload: PKI.transaction(["signedDate": PKI.milliseconds(date)]))
                let refusal = await Self.refusal { _ = try await candidate.verifyAndDecodeTransaction(jws) }
                #expect(refusal?.code == .notAuthenticated)
            }
        }
    }

    @Test func evidenceWithoutItsSigningDateIsMalformed() async throws {
        let pki = try PKI.ecdsa()
        let verifier = SignedDataVerifier(trust: pki.trust, app: Self.app)
        let refusal = await Self.refusal {
            _ = try await verifier.verifyAndDecodeTransaction(try pki.jws(payload: PKI.transaction(["signedDate": NSNull()])))
        }
        #expect(refusal?.code == .malformed)
        #expect(refusal?.code.appleStatus == 21002)
    }

    @Test(arguments: ["", "a.b", "a.b.c.d", "!!.??.**", "eyJhbGciOiJFUzI1NiJ9.bm90IGpzb24.AAAA"])
    func malformedTokensAreMalformed(text: String) async throws {
        let verifier = SignedDataVerifier(trust: try PKI.ecdsa().trust, app: Self.app)
        let refusal = await Self.refusal { _ = try await verifier.verifyAndDecodeTransaction(text) }
        #expect(refusal?.code == .malformed || refusal?.code == .notAuthenticated)
        #expect(refusal != nil)
    }

    @Test func anotherAppsTransactionIsTheWrongApp() async throws {
        let pki = try PKI.ecdsa()
        let verifier = SignedDataVerifier(trust: pki.trust, app: Self.app)
        let refusal = await Self.refusal {
            _ = try await verifier.verifyAndDecodeTransaction(try pki.jws(payload: PKI.transaction(["bundleId": "com.other.app"])))
        }
        #expect(refusal?.code == .wrongApp)
        // Without expectations (a support tool), the same evidence is read as it is.
        let anyApp = SignedDataVerifier(trust: pki.trust, app: AppStoreApp())
        #expect(
            try await anyApp.verifyAndDecodeTransaction(try pki.jws(payload: PKI.transaction(["bundleId": "com.other.app"]))).bundleId
                == "com.other.app")
    }

    @Test func environmentsAreBoundWithApplesOldStatusCodes() async throws {
        let pki = try PKI.ecdsa()
        let productionOnly = SignedDataVerifier(
            trust: pki.trust, app: AppStoreApp(bundleId: "com.example.app", appAppleId: 1_234_567_890, environments: [.production]))
        let sandboxOnly = SignedDataVerifier(trust: pki.trust, app: AppStoreApp(bundleId: "com.example.app", environments: [.sandbox]))
        let both = SignedDataVerifier(trust: pki.trust, app: Self.app)
        let sandbox = try pki.jws(payload: PKI.transaction(["environment": "Sandbox"]))
        let production = try pki.jws(payload: PKI.transaction())
        let sandboxRefusal = await Self.refusal { _ = try await productionOnly.verifyAndDecodeTransaction(sandbox) }
        #expect(sandboxRefusal?.code == .sandboxEvidence)
        #expect(sandboxRefusal?.code.appleStatus == 21007)
        let productionRefusal = await Self.refusal { _ = try await sandboxOnly.verifyAndDecodeTransaction(production) }
        #expect(productionRefusal?.code == .productionEvidence)
        #expect(productionRefusal?.code.appleStatus == 21008)
        #expect(try await both.verifyAndDecodeTransaction(sandbox).environment == .sandbox)
        #expect(try await both.verifyAndDecodeTransaction(production).environment == .production)
        // The App Store's chain never signs Xcode evidence; a token that says so is refused.
        let claimsXcode = await Self.refusal {
            _ = try await both.verifyAndDecodeTransaction(try pki.jws(payload: PKI.transaction(["environment": "Xcode"])))
        }
        #expect(claimsXcode?.code == .environmentNotAccepted)
    }

    @Test func anAppTransactionIsCheckedAtItsCreationDateAndBoundToTheAppleId() async throws {
        let pki = try PKI.ecdsa(leafValidity: PKI.date(2019)...PKI.date(2021))
        let verifier = SignedDataVerifier(trust: pki.trust, app: Self.app)
        let created2020 = PKI.milliseconds(PKI.date(2020, 6))
        let genuine = try await verifier.verifyAndDecodeAppTransaction(
            try pki.jws(payload: PKI.appTransaction(["receiptCreationDate": created2020])))
        #expect(genuine.appTransactionId == "704289572")
        let late = await Self.refusal {
            _ = try await verifier.verifyAndDecodeAppTransaction(
                try pki.jws(payload: PKI.appTransaction(["receiptCreationDate": PKI.milliseconds(PKI.date(2022))])))
        }
        #expect(late?.code == .notAuthenticated)
        let otherApp = await Self.refusal {
            _ = try await verifier.verifyAndDecodeAppTransaction(
                try pki.jws(payload: PKI.appTransaction(["receiptCreationDate": created2020, "appAppleId": 999])))
        }
        #expect(otherApp?.code == .wrongApp)
        // In the sandbox the Apple id is not the app's (Apple writes 0 or nothing): it is not checked.
        let sandbox = try await verifier.verifyAndDecodeAppTransaction(
            try pki.jws(payload: PKI.appTransaction(["receiptCreationDate": created2020, "appAppleId": 0, "receiptType": "Sandbox"])))
        #expect(sandbox.receiptType == .sandbox)
        // An app whose settings name no Apple id cannot take production evidence that names one on trust.
        let unset = SignedDataVerifier(trust: pki.trust, app: AppStoreApp(bundleId: "com.example.app"))
        let unsetRefusal = await Self.refusal {
            _ = try await unset.verifyAndDecodeAppTransaction(
                try pki.jws(payload: PKI.appTransaction(["receiptCreationDate": created2020])))
        }
        #expect(unsetRefusal?.code == .wrongApp)
    }

    /// Apple documents `appTransactionId` as a string; a number is taken as its digits, while a
    /// fraction or another type is still malformed.
    @Test func anAppTransactionIdSentAsANumberIsTakenAsItsDigits() async throws {
        let pki = try PKI.ecdsa()
        let verifier = SignedDataVerifier(trust: pki.trust, app: Self.app)
        let numeric = try await verifier.verifyAndDecodeAppTransaction(
            try pki.jws(payload: PKI.appTransaction(["appTransactionId": 704_289_572])))
        #expect(numeric.appTransactionId == "704289572")
        let string = try await verifier.verifyAndDecodeAppTransaction(try pki.jws(payload: PKI.appTransaction()))
        #expect(string.appTransactionId == "704289572")
        for value: any Sendable in [1.5, ["704289572"], true] {
            let refusal = await Self.refusal {
                _ = try await verifier.verifyAndDecodeAppTransaction(try pki.jws(payload: PKI.appTransaction(["appTransactionId": value])))
            }
            #expect(refusal?.code == .malformed, "\(value)")
        }
    }

    /// A caller with no Apple id to bind to (report intake for an app without purchase settings)
    /// turns the refusal of an unset Apple id off; a set one is still checked.
    @Test func anUnsetAppleIdIsSkippedOnlyWhenTheAppSaysSo() async throws {
        let pki = try PKI.ecdsa()
        let production = try pki.jws(payload: PKI.appTransaction())
        let lenient = SignedDataVerifier(
            trust: pki.trust, app: AppStoreApp(bundleId: "com.example.app", refusesAppAppleIdWhenUnset: false))
        #expect(try await lenient.verifyAndDecodeAppTransaction(production).appAppleId == 1_234_567_890)
        let bound = SignedDataVerifier(
            trust: pki.trust, app: AppStoreApp(bundleId: "com.example.app", appAppleId: 999, refusesAppAppleIdWhenUnset: false))
        let refusal = await Self.refusal { _ = try await bound.verifyAndDecodeAppTransaction(production) }
        #expect(refusal?.code == .wrongApp)
        // The default is unchanged: an app's settings without an Apple id refuse it.
        let strict = SignedDataVerifier(trust: pki.trust, app: AppStoreApp(bundleId: "com.example.app"))
        #expect(await Self.refusal { _ = try await strict.verifyAndDecodeAppTransaction(production) }?.code == .wrongApp)
    }

    @Test func xcodeEvidenceIsAcceptedOnlyWithTheCertificateTheAppsSettingsName() async throws {
        let apple = try PKI.ecdsa()
        let xcode = try PKI.xcode()
        let otherXcode = try PKI.xcode()
        let signingKey = try #require(xcode.signingKey)
        let header: [String: any Sendable] = [
            "alg": "ES256", "kid": "Apple_Xcode_Key", "x5c": [Data(PKI.der(xcode.certificate)).base64EncodedString()],
        ]
        let jws = try PKI.sign(header: header, payload: PKI.transaction(["environment": "Xcode"]), key: signingKey)

        let byDefault = SignedDataVerifier(trust: apple.trust, app: Self.app)
        let refused = await Self.refusal { _ = try await byDefault.verifyAndDecodeTransaction(jws) }
        #expect(refused?.code == .notAuthenticated)

        var settings = Self.app
        settings.xcodeCertificate = xcode.certificate
        let named = SignedDataVerifier(trust: apple.trust, app: settings)
        #expect(try await named.verifyAndDecodeTransaction(jws).environment == .xcode)

        settings.xcodeCertificate = otherXcode.certificate
        let otherCertificate = await Self.refusal {
            _ = try await SignedDataVerifier(trust: apple.trust, app: settings).verifyAndDecodeTransaction(jws)
        }
        #expect(otherCertificate?.code == .notAuthenticated)

        // The signature is checked, never skipped: a changed payload under Xcode's certificate is refused.
        let parts = jws.split(separator: ".").map(String.init)
        let changed =
            parts[0] + "." + PKI.base64URL(try PKI.json(PKI.transaction(["environment": "Xcode", "productId": "free.stuff"]))) + "."
            + parts[2]
        let forged = await Self.refusal { _ = try await named.verifyAndDecodeTransaction(changed) }
        #expect(forged?.code == .notAuthenticated)

        // Xcode's certificate cannot vouch for production evidence.
        let claimsProduction = try PKI.sign(header: header, payload: PKI.transaction(), key: signingKey)
        let production = await Self.refusal { _ = try await named.verifyAndDecodeTransaction(claimsProduction) }
        #expect(production?.code == .notAuthenticated)
    }

    @Test func theVerifiedChainCacheIsBounded() async throws {
        let verifiers = try (0..<3).map { _ in try PKI.ecdsa() }
        let trust = PurchaseTrust(jwsRoots: verifiers.map(\.root), receiptRoots: [])
        let verifier = SignedDataVerifier(trust: trust, app: Self.app, cacheCapacity: 2)
        for pki in verifiers {
            _ = try await verifier.verifyAndDecodeTransaction(try pki.jws(payload: PKI.transaction()))
        }
        #expect(verifier.cachedChainCount == 2)
        // The evicted chain still verifies, by validation again.
        _ = try await verifier.verifyAndDecodeTransaction(try verifiers[0].jws(payload: PKI.transaction()))
        #expect(verifier.cachedChainCount == 2)
    }

    @Test func aRenewalInfoIsVerifiedAndItsEnvironmentBound() async throws {
        let pki = try PKI.ecdsa()
        let verifier = SignedDataVerifier(
            trust: pki.trust, app: AppStoreApp(bundleId: "com.example.app", appAppleId: 1, environments: [.production]))
        let renewal = try await verifier.verifyAndDecodeRenewalInfo(try pki.jws(payload: PKI.renewalInfo()))
        #expect(renewal.autoRenewStatus == .on)
        let sandbox = await Self.refusal {
            _ = try await verifier.verifyAndDecodeRenewalInfo(try pki.jws(payload: PKI.renewalInfo(["environment": "Sandbox"])))
        }
        #expect(sandbox?.code == .sandboxEvidence)
    }
}

/// Apple's roots as shipped: each hashes to its published SHA-256 fingerprint.
@Suite struct AppleRootCertificateTests {
    @Test func bothRootsMatchTheirPins() throws {
        let g3 = try AppleRootCertificates.rootCAG3.certificate()
        #expect(g3.subject.description.contains("Apple Root CA - G3"))
        let inc = try AppleRootCertificates.appleIncRoot.certificate()
        #expect(inc.subject.description.contains("Apple Root CA"))
        let trust = try PurchaseTrust.apple()
        #expect(trust.jwsRoots == [g3])
        #expect(trust.receiptRoots == [inc])
    }

    @Test func aChangedRootIsRefusedByItsPin() throws {
        var root = AppleRootCertificates.rootCAG3
        root.sha256 = String(repeating: "0", count: 64)
        #expect(throws: PurchaseConfigurationError.self) { try root.certificate() }
    }
}
