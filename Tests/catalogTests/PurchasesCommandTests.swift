import AppStoreTestSupport
import Foundation
import Testing

/// `catalog purchases verify` as support staff run it: one JSON line per file, exit 0 only when all are valid.
@Suite struct PurchasesCommandTests {
    typealias PKI = AppStoreTestPKI

    static func lines(_ stdout: String) throws -> [[String: Any]] {
        try stdout.split(separator: "\n").map {
            try #require(try JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any])
        }
    }

    @Test func everyKindOfEvidenceIsVerifiedAndSummarised() async throws {
        let jws = try PKI.ecdsa()
        let receipts = try await PKI.rsa()
        try await CommandTests.withWorkspace { workspace in
            try workspace.write("roots.pem", PKI.pem(jws.root) + "\n" + PKI.pem(receipts.root) + "\n")
            try workspace.write("transaction.jws", try jws.jws(payload: PKI.transaction()))
            let notification = try jws.jws(
                payload: PKI.notification(
                    type: "SUBSCRIBED", subtype: "INITIAL_BUY", data: ["signedTransactionInfo": try jws.jws(payload: PKI.transaction())]))
            try workspace.write("notification.json", "{\"signedPayload\":\"\(notification)\"}")
            try workspace.write("renewal.jws", try jws.jws(payload: PKI.renewalInfo()))
            try workspace.write("app.jws", try jws.jws(payload: PKI.appTransaction()))
            try workspace.write(
                "receipt.b64", Data(try await TestReceipts.signed(TestReceipts.payload(), by: receipts)).base64EncodedString())
            let run = try await workspace.run(
                "purchases", "verify", "--root-certificate", "roots.pem", "--device-id", "07070707-0707-0707-0707-070707070707",
                "transaction.jws", "notification.json", "renewal.jws", "app.jws", "receipt.b64")
            #expect(run.status == 0, "\(run.stdout)\(run.stderr)")
            let lines = try Self.lines(run.stdout)
            #expect(lines.map { $0["kind"] as? String } == ["transaction", "notification", "renewalInfo", "appTransaction", "receipt"])
            #expect(lines.allSatisfy { $0["verdict"] as? String == "valid" })
            #expect(lines[0]["transactionId"] as? String == "2000000000000001")
            #expect(lines[0]["signedDate"] as? String == "2025-01-01T00:00:00.000Z")
            #expect(lines[1]["notificationType"] as? String == "SUBSCRIBED")
            #expect(lines[1]["productId"] as? String == "com.example.app.pro.monthly")
            #expect(lines[4]["bundleId"] as? String == "com.example.app")
            #expect(lines[4]["productId"] as? String == "com.example.app.pro.monthly")
        }
    }

    @Test func aRefusalIsALineWithItsCodeAndTheExitStatusIsOne() async throws {
        let jws = try PKI.ecdsa()
        let impostor = try PKI.ecdsa()
        try await CommandTests.withWorkspace { workspace in
            try workspace.write("root.pem", PKI.pem(jws.root) + "\n")
            try workspace.write("genuine.jws", try jws.jws(payload: PKI.transaction()))
            try workspace.write("forged.jws", try impostor.jws(payload: PKI.transaction()))
            try workspace.write("sandbox.jws", try jws.jws(payload: PKI.transaction(["environment": "Sandbox"])))
            let run = try await workspace.run(
                "purchases", "verify", "--root-certificate", "root.pem", "--app", "com.example.app", "--environment", "Production",
                "genuine.jws", "forged.jws", "sandbox.jws", "missing.jws")
            #expect(run.status == 1)
            let lines = try Self.lines(run.stdout)
            #expect(lines.map { $0["verdict"] as? String } == ["valid", "invalid", "invalid", "invalid"])
            #expect(lines[1]["code"] as? String == "not-authenticated")
            #expect(lines[1]["status"] as? Int == 21003)
            #expect(lines[2]["code"] as? String == "sandbox-evidence")
            #expect(lines[2]["status"] as? Int == 21007)
            #expect(lines[3]["code"] as? String == "malformed")
            let otherApp = try await workspace.run(
                "purchases", "verify", "--root-certificate", "root.pem", "--app", "com.other.app", "genuine.jws")
            #expect(otherApp.status == 1)
            #expect(try Self.lines(otherApp.stdout).first?["code"] as? String == "wrong-app")
        }
    }

    @Test func datesArePrintedToTheMillisecondAsSigned() async throws {
        let jws = try PKI.ecdsa()
        let milliseconds: [Int64] = [1, 7, 123, 456, 999]
        try await CommandTests.withWorkspace { workspace in
            try workspace.write("root.pem", PKI.pem(jws.root) + "\n")
            var files: [String] = []
            for (index, extra) in milliseconds.enumerated() {
                let signed = PKI.milliseconds(PKI.defaultSignedDate) + 86_400_000 * Int64(index) + extra
                try workspace.write("t\(index).jws", try jws.jws(payload: PKI.transaction(["signedDate": signed])))
                files.append("t\(index).jws")
            }
            let run = try await CommandTests.run(["purchases", "verify", "--root-certificate", "root.pem"] + files, in: workspace.root)
            #expect(run.status == 0, "\(run.stdout)\(run.stderr)")
            let dates = try Self.lines(run.stdout).map { $0["signedDate"] as? String }
            #expect(
                dates
                    == milliseconds.enumerated().map { index, extra in
                        "2025-01-0\(index + 1)T00:00:00.\(String(format: "%03d", extra))Z"
                    })
        }
    }

    @Test func aRefusedTokenStillNamesWhatItClaims() async throws {
        let jws = try PKI.ecdsa()
        let impostor = try PKI.ecdsa()
        try await CommandTests.withWorkspace { workspace in
            try workspace.write("root.pem", PKI.pem(jws.root) + "\n")
            try workspace.write("forged.jws", try impostor.jws(payload: PKI.transaction()))
            let notification = try impostor.jws(
                payload: PKI.notification(type: "SUBSCRIBED", data: ["signedTransactionInfo": try impostor.jws(payload: PKI.transaction())])
            )
            try workspace.write("forged-notification.json", "{\"signedPayload\":\"\(notification)\"}")
            let run = try await workspace.run(
                "purchases", "verify", "--root-certificate", "root.pem", "forged.jws", "forged-notification.json")
            #expect(run.status == 1)
            let lines = try Self.lines(run.stdout)
            for line in lines {
                #expect(line["verdict"] as? String == "invalid")
                #expect(line["code"] as? String == "not-authenticated")
                #expect(line["bundleId"] as? String == "com.example.app")
                #expect(line["productId"] as? String == "com.example.app.pro.monthly")
                #expect(line["transactionId"] as? String == "2000000000000001")
                #expect(line["originalTransactionId"] as? String == "2000000000000001")
                #expect(line["signedDate"] as? String == "2025-01-01T00:00:00.000Z")
            }
            #expect(lines.last?["notificationType"] as? String == "SUBSCRIBED")
        }
    }

    @Test func aReceiptListsEveryInAppEntryAfterTheOtherKeys() async throws {
        let receipts = try await PKI.rsa()
        let jws = try PKI.ecdsa()
        try await CommandTests.withWorkspace { workspace in
            try workspace.write("roots.pem", PKI.pem(receipts.root) + "\n" + PKI.pem(jws.root) + "\n")
            try workspace.write(
                "receipt.b64", Data(try await TestReceipts.signed(TestReceipts.payload(), by: receipts)).base64EncodedString())
            try workspace.write("transaction.jws", try jws.jws(payload: PKI.transaction()))
            let run = try await workspace.run("purchases", "verify", "--root-certificate", "roots.pem", "receipt.b64", "transaction.jws")
            #expect(run.status == 0, "\(run.stdout)\(run.stderr)")
            let raw = run.stdout.split(separator: "\n").map(String.init)
            #expect(raw.first?.contains("\"subtype\":null,\"inApp\":[{\"productId\":") == true, "\(raw.first ?? "")")
            #expect(raw.last?.hasSuffix("\"subtype\":null,\"inApp\":null}") == true, "\(raw.last ?? "")")
            let entries = try #require(try Self.lines(run.stdout).first?["inApp"] as? [[String: Any]])
            #expect(entries.map { $0["productId"] as? String } == ["com.example.app.lifetime", "com.example.app.pro.monthly"])
            #expect(entries[1]["transactionId"] as? String == "1000000002")
            #expect(entries[1]["originalTransactionId"] as? String == "1000000002")
            #expect(entries[1]["purchaseDate"] as? String == "2024-12-15T10:00:00.000Z")
            #expect(entries[1]["expiresDate"] as? String == "2025-01-15T10:00:00.000Z")
            #expect(entries[1]["cancellationDate"] is NSNull)
            #expect(entries[1]["quantity"] as? Int == 1)
            #expect(entries[0]["expiresDate"] is NSNull)
        }
    }

    @Test func reasonsArePlainAndCountWhatTheEvidenceCarries() async throws {
        let jws = try PKI.ecdsa()
        try await CommandTests.withWorkspace { workspace in
            try workspace.write("root.pem", PKI.pem(jws.root) + "\n")
            try workspace.write(
                "four.jws", try jws.jws(header: ["alg": "ES256", "x5c": jws.x5c + [jws.x5c[2]]], payload: PKI.transaction()))
            try workspace.write("not-a-receipt.der", "NOT A RECEIPT")
            // A SEQUENCE that announces 4 KiB and holds one byte.
            try Data([0x30, 0x82, 0x10, 0x00, 0x06]).write(to: workspace.root.appendingPathComponent("truncated.der"))
            let run = try await workspace.run(
                "purchases", "verify", "--root-certificate", "root.pem", "four.jws", "not-a-receipt.der", "truncated.der")
            #expect(run.status == 1)
            let lines = try Self.lines(run.stdout)
            let reasons = lines.map { $0["reason"] as? String ?? "" }
            #expect(reasons[0].contains("x5c has 4 certificates"), "\(reasons[0])")
            #expect(lines[1]["code"] as? String == "malformed")
            #expect(lines[2]["code"] as? String == "malformed")
            for reason in reasons {
                #expect(!reason.isEmpty && !reason.contains(".swift:") && reason.count < 300, "\(reason)")
            }
        }
    }

    @Test func applesOwnRootsDoNotTrustATestCA() async throws {
        let jws = try PKI.ecdsa()
        try await CommandTests.withWorkspace { workspace in
            try workspace.write("transaction.jws", try jws.jws(payload: PKI.transaction()))
            let run = try await workspace.run("purchases", "verify", "transaction.jws")
            #expect(run.status == 1)
            #expect(try Self.lines(run.stdout).first?["code"] as? String == "not-authenticated")
            let misuse = try await workspace.run("purchases", "verify", "--device-id", "xyz", "transaction.jws")
            #expect(misuse.status == 64)
        }
    }
}

/// `scripts/check-real-purchases` on a folder laid out like the real corpus, with evidence the test's
/// own CA signed: verdicts that agree pass, one that does not is printed and fails the run.
@Suite struct CheckRealPurchasesScriptTests {
    typealias PKI = AppStoreTestPKI

    static func runScript(_ folder: URL, roots: URL) throws -> (status: Int32, output: String) {
        try ScriptTests.check("check-real-purchases", folder, environment: ["CHECK_EXTRA_ROOTS": roots.path])
    }

    @Test func verdictsAreComparedWithTheIndex() async throws {
        let jws = try PKI.ecdsa()
        let impostor = try PKI.ecdsa()
        let receipts = try await PKI.rsa()
        try await CommandTests.withWorkspace { workspace in
            try workspace.write("roots.pem", PKI.pem(jws.root) + "\n" + PKI.pem(receipts.root) + "\n")
            try workspace.write("corpus/jws/good.jws", try jws.jws(payload: PKI.transaction(["environment": "Sandbox"])))
            try workspace.write("corpus/jws/forged.jws", try impostor.jws(payload: PKI.transaction(["environment": "Sandbox"])))
            let receipt = try await TestReceipts.signed(TestReceipts.payload(environment: "ProductionSandbox", appItemId: 0), by: receipts)
            try FileManager.default.createDirectory(
                at: workspace.root.appendingPathComponent("corpus/receipts"), withIntermediateDirectories: true)
            for name in ["good.der", "other-device.der"] {
                try Data(receipt).write(to: workspace.root.appendingPathComponent("corpus/receipts/\(name)"), options: [])
            }
            func index(forgedExpected: String) throws {
                try workspace.write(
                    "corpus/jws/index.tsv",
                    "file\tkind\tenvironment\tbundleId\tappAppleId\texpected\n"
                        + "good.jws\ttransaction\tSandbox\tcom.example.app\t\tvalid\n"
                        + "forged.jws\ttransaction\tSandbox\tcom.example.app\t\t\(forgedExpected)\n")
                try workspace.write(
                    "corpus/receipts/index.tsv",
                    "file\tbundleId\tdeviceId\texpected\n" + "good.der\tcom.example.app\t\(String(repeating: "07", count: 16))\tvalid\n"
                        + "other-device.der\tcom.example.app\t\(String(repeating: "08", count: 16))\tinvalid\n")
            }
            let corpus = workspace.root.appendingPathComponent("corpus")
            let roots = workspace.root.appendingPathComponent("roots.pem")
            try index(forgedExpected: "invalid")
            let agreeing = try Self.runScript(corpus, roots: roots)
            #expect(agreeing.status == 0, "\(agreeing.output)")
            #expect(agreeing.output.contains("8 of 8 verdicts agree, 0 disagree"))
            try index(forgedExpected: "valid")
            let disagreeing = try Self.runScript(corpus, roots: roots)
            #expect(disagreeing.status == 1)
            #expect(disagreeing.output.contains("jws/forged.jws unbound: expected valid, got invalid (not-authenticated"))
            #expect(disagreeing.output.contains("6 of 8 verdicts agree, 2 disagree"))
        }
    }
}
