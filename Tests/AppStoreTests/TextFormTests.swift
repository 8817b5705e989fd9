import Foundation
import Ledger
import Testing

@testable import AppStore

/// The module's own readers of text forms: receipts' RFC 3339 dates, the one printed form of a date,
/// and x5c's base64 read strictly.
@Suite struct TextFormTests {
    /// What the receipt decoder read with before: a DateFormatter per format, tried in turn.
    static func formatterDate(_ text: String) -> Date? {
        for format in [
            "yyyy-MM-dd'T'HH:mm:ssXXXXX", "yyyy-MM-dd'T'HH:mm:ss.SSSXXXXX", "yyyy-MM-dd'T'HH:mm:ssXXXX", "yyyy-MM-dd'T'HH:mm:ss.SSSXXXX",
        ] {
            let formatter = DateFormatter()
            formatter.locale = Locale(identifier: "en_US_POSIX")
            formatter.timeZone = TimeZone(identifier: "UTC")
            formatter.dateFormat = format
            if let date = formatter.date(from: text) { return date }
        }
        return nil
    }

    @Test(arguments: [
        "2015-08-13T07:50:46Z", "2020-07-22T18:33:15+0100", "2020-07-22T18:33:15+01:00", "2024-02-29T23:59:59-08:00",
        "2017-11-28T11:13:57.123Z", "2017-11-28T11:13:57.123+0530", "1999-12-31T23:59:59Z", "4001-01-01T00:00:00+0000",
    ])
    func receiptDatesReadAsTheFormattersDid(text: String) throws {
        let parsed = try #require(RFC3339.parse(text))
        let expected = try #require(Self.formatterDate(text))
        #expect(abs(parsed.timeIntervalSince(expected)) < 0.0005, "\(parsed) \(expected)")
    }

    @Test(arguments: [
        "", "2015-08-13", "2015-08-13T07:50:46", "2015-13-01T00:00:00Z", "2015-02-29T00:00:00Z", "2015-08-13T24:00:00Z",
        "2015-08-13T07:60:46Z", "2015-08-13T07:50:46.Z", "2015-08-13T07:50:46.1234567891Z", "2015-08-13T07:50:46Zjunk",
        "2015-08-13 07:50:46Z", "2015-08-13T07:50:46+1", "2015-08-13T07:50:46+2500", "+015-08-13T07:50:46Z", "2015-08-13t07:50:46z",
    ])
    func anythingElseIsNotADate(text: String) {
        #expect(RFC3339.parse(text) == nil)
    }

    @Test func fractionsAreKeptToTheNanosecond() throws {
        let base = try #require(RFC3339.parse("2017-11-28T11:13:57Z"))
        #expect(RFC3339.parse("2017-11-28T11:13:57.5Z") == base.addingTimeInterval(0.5))
        #expect(RFC3339.format(try #require(RFC3339.parse("2017-11-28T11:13:57.123456789Z"))) == "2017-11-28T11:13:57.123Z")
    }

    @Test func datesArePrintedToTheMillisecondTheyWereSignedAt() {
        // Apple's milliseconds as the JSON decoder turns them into a Date.
        for milliseconds: Int64 in [1_735_689_600_001, 1_735_689_600_007, 1_735_689_600_123, 1_759_302_518_835, 0, -1, 253_402_300_799_999]
        {
            let date = Date(timeIntervalSince1970: Double(milliseconds) / 1000)
            let printed = RFC3339.format(date)
            #expect(RFC3339.parse(printed) == Date(timeIntervalSince1970: Double(milliseconds) / 1000), "\(printed)")
            #expect(printed.hasSuffix(String(format: ".%03dZ", (milliseconds % 1000 + 1000) % 1000)), "\(printed)")
        }
        #expect(RFC3339.format(Date(timeIntervalSince1970: -1 / 1000)) == "1969-12-31T23:59:59.999Z")
        #expect(RFC3339.format(Date(timeIntervalSince1970: 1_759_302_518.835)) == "2025-10-01T07:08:38.835Z")
    }

    @Test func canonicalBase64ReadsAsFoundationReadsIt() {
        var generator = SystemRandomNumberGenerator()
        for length in 1..<64 {
            let bytes = (0..<length).map { _ in UInt8.random(in: 0...255, using: &generator) }
            let text = Data(bytes).base64EncodedString()
            #expect(StrictBase64.decode(text) == bytes, "\(text)")
        }
    }

    @Test(arguments: [
        "", "TWE", "TWE==", "TWFu====", "TWF=", "TR==", "TW\nFu", "TWFu\n", " TWFu", "TW Fu", "TWE=TWFu", "T===", "TQ=A", "TW-u", "TW_u",
    ])
    func anyOtherSpellingIsRefused(text: String) {
        #expect(StrictBase64.decode(text) == nil)
    }
}
