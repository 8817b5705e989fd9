import AppStoreTestSupport
import CatalogKit
import CatalogTestSupport
import Foundation
import Testing

@testable import AppStore

/// The payload decoder gives `JSONDecoder`'s answers (with `.millisecondsSince1970`, as Apple's
/// library reads dates) on Apple's payloads, on every other form JSON allows for them, and on
/// thousands of damaged ones; and it refuses what is not JSON.
@Suite struct PayloadDecoderTests {
    typealias PKI = AppStoreTestPKI

    static func foundation<T: Decodable>(_ type: T.Type, _ bytes: [UInt8]) -> Result<T, any Error> {
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .millisecondsSince1970
        return Result { try decoder.decode(T.self, from: Data(bytes)) }
    }

    static func tape<T: Decodable>(_ type: T.Type, _ bytes: [UInt8]) -> Result<T, any Error> {
        Result { try PayloadDecoder.decode(T.self, from: bytes) }
    }

    /// Both decoders' answers for `bytes`: equal values, or both refusals. Foundation's decoder is
    /// laxer than RFC 8259 where nobody reads (a trailing comma, `01`, `1.`, a raw control character
    /// in a string), so where `bytes` may not be JSON (`valid` false) the tape may refuse what
    /// Foundation reads; never the other way round, and never another value.
    static func agree<T: Decodable & Equatable>(
        _ type: T.Type, _ bytes: [UInt8], valid: Bool = true, sourceLocation: Testing.SourceLocation = #_sourceLocation
    ) {
        switch (foundation(type, bytes), tape(type, bytes)) {
        case (.success(let expected), .success(let found)):
            #expect(found == expected, "\(String(decoding: bytes, as: UTF8.self))", sourceLocation: sourceLocation)
        case (.failure, .failure): break
        case (.success, .failure) where !valid: break
        case (let expected, let found):
            Issue.record(
                "Foundation: \(expected), the tape: \(found) for \(String(decoding: bytes, as: UTF8.self))", sourceLocation: sourceLocation)
        }
    }

    static var payloads: [(name: String, bytes: [UInt8])] {
        get throws {
            [
                ("transaction", Array(try PKI.json(PKI.transaction(["appAccountToken": "7e3fb20b-4cdb-47cc-936d-99d65f608138"])))),
                ("renewal info", Array(try PKI.json(PKI.renewalInfo(["eligibleWinBackOfferIds": ["a", "b"], "renewalPrice": 4990])))),
                (
                    "notification",
                    Array(try PKI.json(PKI.notification(data: ["signedTransactionInfo": "a.b.c", "signedRenewalInfo": "d.e.f"])))
                ),
                ("app transaction", Array(try PKI.json(PKI.appTransaction()))),
            ]
        }
    }

    static func agreeOnAll(_ bytes: [UInt8], valid: Bool = true, sourceLocation: Testing.SourceLocation = #_sourceLocation) {
        agree(JWSTransactionDecodedPayload.self, bytes, valid: valid, sourceLocation: sourceLocation)
        agree(JWSRenewalInfoDecodedPayload.self, bytes, valid: valid, sourceLocation: sourceLocation)
        agree(ResponseBodyV2DecodedPayload.self, bytes, valid: valid, sourceLocation: sourceLocation)
        agree(AppTransaction.self, bytes, valid: valid, sourceLocation: sourceLocation)
    }

    @Test func applesPayloadsDecodeAsFoundationDecodesThem() throws {
        for (name, bytes) in try Self.payloads {
            Self.agreeOnAll(bytes)
            #expect((try? PayloadDecoder.decode(JWSTransactionDecodedPayload.self, from: bytes)) != nil, "\(name)")
        }
        let transaction = try PayloadDecoder.decode(JWSTransactionDecodedPayload.self, from: Self.payloads[0].bytes)
        #expect(transaction.transactionId == "2000000000000001" && transaction.price == 9990 && transaction.quantity == 1)
        #expect(transaction.expiresDate == PKI.date(2025, 1, 31) && transaction.type == .autoRenewableSubscription)
    }

    /// Every form JSON allows: whitespace, escapes (surrogate pairs too), a fractional date, numbers
    /// with exponents, nulls, members in any order, keys nobody reads.
    @Test func everyFormJSONAllowsIsReadAlike() {
        let forms = [
            #" { "transactionId" : "1" , "quantity" : 2 } "#,
            "\t{\"transactionId\":\"1\"}\r\n",
            #"{"productId":"caf\u00e9 \ud83d\ude00 \/ \" \\ \b\f\n\r\t","bundleId":"é😀"}"#,
            #"{"signedDate":1735689600000.5,"purchaseDate":-1,"expiresDate":1.7e12,"revocationDate":0}"#,
            #"{"quantity":1e1,"price":-0,"signedDate":1E3}"#,
            #"{"quantity":1.0}"#, #"{"quantity":1.5}"#, #"{"price":9223372036854775807}"#, #"{"price":9223372036854775808}"#,
            #"{"price":-9223372036854775808}"#, #"{"quantity":null,"productId":null,"isUpgraded":false}"#,
            #"{"unknown":{"deep":[1,[2,{"x":null}],"y"]},"transactionId":"1"}"#, #"{"eligibleWinBackOfferIds":[]}"#,
            #"{"eligibleWinBackOfferIds":["a",null]}"#, #"{"autoRenewStatus":"1"}"#, #"{"appTransactionId":704289572}"#,
            #"{"appTransactionId":"704289572"}"#, #"{"appTransactionId":true}"#, #"{"data":{"status":2},"notificationType":"TEST"}"#,
            #"{"data":{"status":"2"}}"#, #"{"data":null}"#, #"{"data":[]}"#, "{}", "[]", "\"x\"", "1", "null",
            #"{"":1,"transactionId":"1"}"#, #"{"":"","\u0000":null}"#,
        ]
        for form in forms { Self.agreeOnAll(Array(form.utf8)) }
    }

    /// What is not JSON is refused, also where Foundation reads past it.
    @Test func whatIsNotJSONIsRefused() {
        let refused = [
            "", " ", "{", "}", #"{"a":}"#, #"{"a" 1}"#, #"{"a":1,}"#, #"{,"a":1}"#, #"{"a":1}{"#, #"{"a":1} x"#, "{'a':1}",
            #"{"a":01}"#, #"{"a":1.}"#, #"{"a":.5}"#, #"{"a":1e}"#, #"{"a":-}"#, #"{"a":+1}"#, #"{"a":tru}"#, #"{"a":nul}"#,
            #"{"a":"\x"}"#, #"{"a":"\u12"}"#, #"{"a":"\ud800"}"#, #"{"a":"\udc00"}"#, #"{"a":"\ud800\u0041"}"#, "{\"a\":\"\u{01}\"}",
            "{\"a\":\"x", #"{"a":[1,2}"#, #"{"a":[1 2]}"#, #"{a:1}"#, "{\"a\":1}\u{0B}",
        ]
        for text in refused {
            Self.agreeOnAll(Array(text.utf8), valid: false)
            #expect(throws: DecodingError.self, "\(text)") {
                try PayloadDecoder.decode(JWSTransactionDecodedPayload.self, from: Array(text.utf8))
            }
        }
        // Invalid UTF-8, in a string read and in one nobody reads.
        for bytes in [
            Array(#"{"productId":""#.utf8) + [0xC3, 0x28] + Array(#""}"#.utf8), Array(#"{"x":""#.utf8) + [0xFF] + Array(#""}"#.utf8),
        ] {
            Self.agreeOnAll(bytes, valid: false)
            #expect(throws: DecodingError.self) { try PayloadDecoder.decode(JWSTransactionDecodedPayload.self, from: bytes) }
        }
    }

    /// Refusals name the field as Foundation's do, which the verifier's reasons quote.
    @Test func aRefusalNamesTheField() {
        func path(_ text: String) -> String? {
            do {
                _ = try PayloadDecoder.decode(ResponseBodyV2DecodedPayload.self, from: Array(text.utf8))
                return nil
            } catch {
                return AppStoreJSON.describe(error)
            }
        }
        #expect(path(#"{"data":{"status":"x"}}"#) == "field data.status has the wrong type")
        #expect(path(#"{"signedDate":"x"}"#) == "field signedDate has the wrong type")
        #expect(
            path(#"{"summary":{"storefrontCountryCodes":["USA",1]}}"#) == "field summary.storefrontCountryCodes.Index 1 has the wrong type")
        #expect(path(#"{"data":{"appAppleId":1e40}}"#) == "field data.appAppleId is invalid")
        #expect(path("[]") == "not a JSON object")
        #expect(path("{") == "not JSON")
    }

    /// A key read twice from one object is refused (Foundation keeps one of them); so is a document
    /// nested deeper than Apple's could be.
    @Test func aRepeatedKeyAndDeepNestingAreRefused() {
        #expect(throws: DecodingError.self) {
            try PayloadDecoder.decode(JWSTransactionDecodedPayload.self, from: Array(#"{"price":1,"price":2}"#.utf8))
        }
        #expect((try? PayloadDecoder.decode(JWSTransactionDecodedPayload.self, from: Array(#"{"x":1,"x":2}"#.utf8))) != nil)
        let deep = String(repeating: "[", count: JSONScanner.maximumDepth + 1) + String(repeating: "]", count: JSONScanner.maximumDepth + 1)
        #expect(throws: DecodingError.self) {
            try PayloadDecoder.decode(JWSTransactionDecodedPayload.self, from: Array("{\"x\":\(deep)}".utf8))
        }
        let allowed =
            String(repeating: "[", count: JSONScanner.maximumDepth - 1) + String(repeating: "]", count: JSONScanner.maximumDepth - 1)
        #expect((try? PayloadDecoder.decode(JWSTransactionDecodedPayload.self, from: Array("{\"x\":\(allowed)}".utf8))) != nil)
        // Far deeper than any stack allows is refused too, not a crash.
        let abyss = Array(String(repeating: "[", count: 100_000).utf8)
        #expect(throws: DecodingError.self) { try PayloadDecoder.decode(JWSTransactionDecodedPayload.self, from: abyss) }
    }

    /// Damaged payloads (a byte changed, dropped or doubled, at every place, by a fixed seed) get
    /// Foundation's answer, or a refusal where Foundation reads what is not JSON.
    @Test func damagedPayloadsGetFoundationsAnswer() throws {
        var generator = SplitMix64(seed: 37)
        let replacements = Array(#"{}[]":,.-+eE0129 \"#.utf8) + [0x00, 0x1F, 0x7F, 0xC3, 0xFF]
        for (_, bytes) in try Self.payloads {
            for index in bytes.indices {
                var changed = bytes
                switch generator.next() % 3 {
                case 0: changed[index] = replacements[Int(generator.next() % UInt64(replacements.count))]
                case 1: changed.remove(at: index)
                default: changed.insert(bytes[index], at: index)
                }
                Self.agreeOnAll(changed, valid: false)
            }
        }
    }
}
