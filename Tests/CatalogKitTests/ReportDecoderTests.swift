import CatalogKit
import CatalogTestSupport
import Testing
import Time

@Suite struct ReportDecoderTests {
    private let now = Timestamp(secondsSince1970: 1_800_000_000)

    private func decode(_ body: String) -> Result<InvalidIdentifierReport, ReportRejection> {
        ReportDecoder.decode(Array(body.utf8), app: "com.example.app", receivedAt: now, makeReportID: { "server-made" })
    }

    @Test func aValidReportKeepsEveryFieldAndDropsRepeats() throws {
        let report = try decode(ReportExamples.valid).get()
        #expect(report.app == "com.example.app")
        #expect(report.reportID == "6f9619ff-8b86-d011-b42d-00c04fc964ff", "UUIDs are kept in one spelling so that retries match")
        #expect(report.receivedAt == now)
        #expect(report.invalid == ["com.example.level2", "com.example.gone"])
        #expect(report.requested == ["com.example.level1", "com.example.level2", "com.example.gone"])
        #expect(report.platform == .iOS)
        #expect(report.appVersion == AppVersion("2.3.1"))
        #expect(report.environment == .production)
        #expect(report.storefront == "USA")
        #expect(report.feedRevision == 12)
        #expect(report.installID == "7c4a8d09-install")
    }

    /// JSON has one number type: a revision written 12.0 or 1.2e1 is revision 12.
    @Test(arguments: ["12", "12.0", "1.2e1", "120e-1"])
    func aWholeFeedRevisionIsReadInAnySpelling(number: String) throws {
        let report = try decode(#"{"invalidProductIdentifiers":["com.example.a"],"feedRevision":"# + number + "}").get()
        #expect(report.feedRevision == 12)
    }

    /// Play Billing's unfetched products: the ones Play says do not exist (or whose id it refuses)
    /// are invalid; the others say nothing against the product. The platform is Android.
    @Test func unfetchedProductsOfAnAndroidApp() throws {
        let report = try decode(
            #"""
            {"requestedProductIdentifiers":["pro","gems","old","bad"],"unfetchedProducts":[
             {"productId":"old","productType":"inapp","statusCode":3},{"productId":"gems","productType":"inapp","statusCode":4},
             {"productId":"bad","statusCode":2},{"productId":"pro","productType":"subs","statusCode":0},{"productId":"new","statusCode":9}]}
            """#
        ).get()
        #expect(report.platform == .android)
        #expect(report.invalid == ["old", "bad"])
        #expect(report.unfetched.map(\.status) == [.productNotFound, .noEligibleOffer, .invalidProductIdFormat, .unknown, .other(9)])
        #expect(report.allRequestedInvalid == false)
        // Play's ids become the catalog's products; one the catalog does not name is dropped.
        var resolved = report
        #expect(resolved.resolvePlayProducts(["old": ["com.example.old"], "pro": ["com.example.pro.m", "com.example.pro.y"]]) == 1)
        #expect(resolved.invalid == ["com.example.old"])
        #expect(resolved.requested == ["com.example.pro.m", "com.example.pro.y", "com.example.old"])
        // An empty list of them is a report of nothing invalid, still valid.
        #expect(try decode(#"{"unfetchedProducts":[],"platform":"Android"}"#).get().invalid == [])
    }

    @Test(arguments: [
        (#"{"platform":"ios","unfetchedProducts":[{"productId":"a","statusCode":3}]}"#, "the platform must be android"),
        (#"{"unfetchedProducts":[{"statusCode":3}]}"#, "unfetchedProducts[0].productId is required"),
        (#"{"unfetchedProducts":[{"productId":"a"}]}"#, "unfetchedProducts[0].statusCode is required"),
        (#"{"unfetchedProducts":[{"productId":"a","statusCode":3.5}]}"#, "statusCode must be one of Play's status codes"),
        (#"{"unfetchedProducts":[{"productId":"a","statusCode":3,"productType":"game"}]}"#, "productType must be inapp or subs"),
        (#"{"unfetchedProducts":[{"productId":"a b","statusCode":3}]}"#, "unfetchedProducts[0].productId: product id 'a b' contains ' '"),
        (#"{"unfetchedProducts":{"productId":"a"}}"#, "unfetchedProducts must be an array of objects"),
    ])
    func unfetchedProductsAreChecked(body: String, message: String) {
        guard case .failure(let rejection) = decode(body) else {
            Issue.record("\(body) should be refused")
            return
        }
        #expect(rejection.description.contains(message), "\(rejection.description)")
    }

    @Test func onlyTheInvalidListIsRequired() throws {
        let report = try decode(#"{"invalidProductIdentifiers":["com.example.a"],"platform":"ios"}"#).get()
        #expect(report.reportID == "server-made")
        #expect(report.platform == .iOS, "platform names match case-insensitively, like in the sources")
        #expect(report.requested == nil && report.environment == nil && report.installID == nil)
    }

    @Test(arguments: ReportExamples.rejected)
    func everyRejectionSaysWhatIsWrong(_ example: (body: String, message: String)) {
        switch decode(example.body) {
        case .success: Issue.record("accepted \(example.body.prefix(80))")
        case .failure(let rejection): #expect(rejection.description == example.message)
        }
    }

    @Test func invalidUTF8IsRefused() {
        var body = Array(#"{"invalidProductIdentifiers":["a"#.utf8)
        body += [0xC3, 0x28] + Array(#""]}"#.utf8)
        guard case .failure(let rejection) = ReportDecoder.decode(body, app: "com.example.app", receivedAt: now) else {
            Issue.record("accepted")
            return
        }
        #expect(rejection.description == "the body is not valid JSON: invalid UTF-8 in a string at byte 31")
    }

    /// Bad input is normal input: every truncation and many byte flips of a valid body are
    /// answered (accepted or refused), never a crash or a hang.
    @Test func mangledBodiesAreAnswered() {
        let valid = Array(ReportExamples.valid.utf8)
        var refused = 0
        func check(_ body: some Collection<UInt8>) {
            if case .failure(let rejection) = ReportDecoder.decode(body, app: "com.example.app", receivedAt: now) {
                refused += 1
                #expect(!rejection.description.isEmpty && rejection.description.count < 300, "\(rejection)")
            }
        }
        // Every proper prefix of an object is cut short: all are refused.
        for length in 0..<valid.count { check(valid[..<length]) }
        #expect(refused == valid.count)
        var seed: UInt64 = 0x9E37_79B9_7F4A_7C15
        for _ in 0..<20_000 {
            var body = valid
            for _ in 0..<3 {
                seed = seed &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
                body[Int(seed >> 33) % body.count] = UInt8(truncatingIfNeeded: seed >> 17)
            }
            check(body)
        }
        #expect(refused > valid.count + 10_000, "most flips break the body or a member's rules")
    }

    @Test func messagesDoNotGrowWithTheInput() throws {
        let long = String(repeating: "x", count: 10_000)
        guard case .failure(let rejection) = decode(#"{"invalidProductIdentifiers":["a"],"platform":"\#(long)"}"#) else {
            Issue.record("accepted")
            return
        }
        #expect(rejection.description.count < 200)
    }
}

@Suite struct IntervalTests {
    @Test(arguments: [("90s", 90), ("30m", 1_800), ("24h", 86_400), ("7d", 604_800), ("2w", 1_209_600), ("9223372036854775807s", .max)])
    func spansAreRead(text: String, seconds: Int64) {
        #expect(Interval(text)?.seconds == seconds)
    }

    /// Zero, negative, unitless, unknown units, and spans of more seconds than 64 bits hold.
    @Test(arguments: ["", "h", "0h", "-1h", "24", "24y", "1.5h", "15250284452472w", "9223372036854775808s"])
    func nonsenseIsRefused(text: String) {
        #expect(Interval(text) == nil)
    }

    /// A span longer than all of time since 1970 starts there: no date before year 1 to write.
    @Test func aSpanReachingBefore1970StartsThere() throws {
        let now = Timestamp(secondsSince1970: 1_800_000_000)
        #expect(try #require(Interval("24h")).before(now) == Timestamp(secondsSince1970: 1_799_913_600))
        #expect(try #require(Interval("441862975w")).before(now) == Timestamp(secondsSince1970: 0))
    }
}
