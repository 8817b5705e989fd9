import Crypto
import FeedSigning
import Foundation
import Testing
import _CryptoExtras

/// `catalog playstore` and `scripts/check-real-playstore`, on a corpus laid out as the project's
/// real Google Play data is (index.tsv, purchases, keys, oidc), signed by keys this test makes.
@Suite struct PlayStoreCommandTests {
    static func runScript(_ folder: URL) throws -> (status: Int32, output: String) {
        try ScriptTests.check("check-real-playstore", folder)
    }

    @Test func verdictsAreComparedWithTheIndex() async throws {
        let licence = try _RSA.Signing.PrivateKey(keySize: .bits2048)
        let google = try _RSA.Signing.PrivateKey(keySize: .bits2048)
        try await CommandTests.withWorkspace { workspace in
            func sign(_ text: String) throws -> String {
                try licence.signature(for: Insecure.SHA1.hash(data: Data(text.utf8)), padding: .insecurePKCS1v1_5).rawRepresentation
                    .base64EncodedString()
            }
            let purchase =
                #"{"packageName":"com.example.playtest","productId":"gems","purchaseTime":1764000000000,"purchaseState":0,"purchaseToken":"t1"}"#
            let pending = purchase.replacingOccurrences(of: #""purchaseState":0"#, with: #""purchaseState":4"#)
            try workspace.write("corpus/keys/app.pub", licence.publicKey.derRepresentation.base64EncodedString())
            try workspace.write("corpus/purchases/good.json", purchase)
            try workspace.write("corpus/purchases/good.sig", try sign(purchase))
            try workspace.write("corpus/purchases/pending.json", pending)
            try workspace.write("corpus/purchases/pending.sig", try sign(pending))
            try workspace.write("corpus/purchases/made-purchased.json", purchase)
            try workspace.write("corpus/purchases/made-purchased.sig", try sign(pending))
            let primitives = try google.publicKey.getKeyPrimitives()
            try workspace.write(
                "corpus/oidc/jwks.json",
                #"{"keys":[{"kty":"RSA","kid":"k1","alg":"RS256","n":"\#(Base64URL.encode(primitives.modulus))","e":"\#(Base64URL.encode(primitives.publicExponent))"}]}"#
            )
            func token(audience: String) throws -> String {
                let header = Base64URL.encode(Data(#"{"alg":"RS256","kid":"k1"}"#.utf8))
                let claims = Base64URL.encode(
                    Data(
                        #"{"iss":"https://accounts.google.com","aud":"\#(audience)","email":"gae-gcp@appspot.gserviceaccount.com","email_verified":true,"iat":1000,"exp":4600}"#
                            .utf8))
                let signature = try google.signature(for: SHA256.hash(data: Data("\(header).\(claims)".utf8)), padding: .insecurePKCS1v1_5)
                return "\(header).\(claims).\(Base64URL.encode(signature.rawRepresentation))"
            }
            try workspace.write("corpus/oidc/push.jwt", try token(audience: "https://example.com"))
            try workspace.write("corpus/oidc/other-audience.jwt", try token(audience: "https://example.org"))
            func index(pendingGrant: String) throws {
                try workspace.write(
                    "corpus/index.tsv",
                    "file\tkind\tapp\texpected\treason\tkey\tat\tsource\tgrant\tsha256\n"
                        + "keys/app.pub\tkey\tcom.example.playtest\tvalid\t\t\t\tsynthetic\t-\t\n"
                        + "purchases/good.json\tpurchase\tcom.example.playtest\tvalid\t\tkeys/app.pub\t\tsynthetic\tyes\t\n"
                        + "purchases/pending.json\tpurchase\tcom.example.playtest\tvalid\t\tkeys/app.pub\t\tsynthetic\t\(pendingGrant)\t\n"
                        + "purchases/made-purchased.json\tpurchase\tcom.example.playtest\tinvalid\t\tkeys/app.pub\t\tsynthetic\tno\t\n"
                        + "oidc/jwks.json\tjwks\t-\tvalid\t\t\t\tsynthetic\t-\t\n"
                        + "oidc/push.jwt\toidc-jwt\t-\tvalid\t\toidc/jwks.json\t2800\tsynthetic\t-\t\n"
                        + "oidc/other-audience.jwt\toidc-jwt\t-\tinvalid\t\toidc/jwks.json\t2800\tsynthetic\t-\t\n")
            }
            try index(pendingGrant: "no")
            let agreed = try Self.runScript(workspace.root.appendingPathComponent("corpus"))
            #expect(agreed.status == 0, "\(agreed.output)")
            #expect(agreed.output.hasSuffix("7 rows checked, 0 disagreements\n"))
            // An index that says a pending purchase grants is a disagreement, said.
            try index(pendingGrant: "yes")
            let disagreed = try Self.runScript(workspace.root.appendingPathComponent("corpus"))
            #expect(disagreed.status == 1)
            #expect(disagreed.output.contains("DISAGREE purchases/pending.json: expected grant yes, got no"))
        }
    }
}
