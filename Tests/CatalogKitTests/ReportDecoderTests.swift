import CatalogKit
import CatalogTestSupport
import PropertyList
import XCTest

final class ReportDecoderTests: XCTestCase {
    private let now = Timestamp(secondsSince1970: 1_800_000_000)

    private func decode(_ body: String) -> Result<InvalidIdentifierReport, ReportRejection> {
        ReportDecoder.decode(Array(body.utf8), app: "com.example.app", receivedAt: now, makeReportID: { "server-made" })
    }

    func testAValidReportKeepsEveryFieldAndDropsRepeats() throws {
        let report = try decode(ReportExamples.valid).get()
        XCTAssertEqual(report.app, "com.example.app")
        XCTAssertEqual(report.reportID, "6f9619ff-8b86-d011-b42d-00c04fc964ff", "UUIDs are kept in one spelling so that retries match")
        XCTAssertEqual(report.receivedAt, now)
        XCTAssertEqual(report.invalid, ["com.example.level2", "com.example.gone"])
        XCTAssertEqual(report.requested, ["com.example.level1", "com.example.level2", "com.example.gone"])
        XCTAssertEqual(report.platform, .iOS)
        XCTAssertEqual(report.appVersion, AppVersion("2.3.1"))
        XCTAssertEqual(report.environment, .production)
        XCTAssertEqual(report.storefront, "USA")
        XCTAssertEqual(report.feedRevision, 12)
        XCTAssertEqual(report.installID, "7c4a8d09-install")
    }

    func testOnlyTheInvalidListIsRequired() throws {
        let report = try decode(#"{"invalidProductIdentifiers":["com.example.a"],"platform":"ios"}"#).get()
        XCTAssertEqual(report.reportID, "server-made")
        XCTAssertEqual(report.platform, .iOS, "platform names match case-insensitively, like in the sources")
        XCTAssertNil(report.requested)
        XCTAssertNil(report.environment)
        XCTAssertNil(report.installID)
    }

    func testEveryRejectionSaysWhatIsWrong() {
        for (body, message) in ReportExamples.rejected {
            switch decode(body) {
            case .success: XCTFail("accepted \(body.prefix(80))")
            case .failure(let rejection): XCTAssertEqual(rejection.description, message, "\(body.prefix(80))")
            }
        }
    }

    func testMessagesDoNotGrowWithTheInput() throws {
        let long = String(repeating: "x", count: 10_000)
        guard case .failure(let rejection) = decode(#"{"invalidProductIdentifiers":["a"],"platform":"\#(long)"}"#) else {
            return XCTFail("accepted")
        }
        XCTAssertLessThan(rejection.description.count, 200)
    }
}
