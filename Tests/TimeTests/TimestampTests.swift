import Testing
import Time

@Suite struct TimestampTests {
    /// Dates print exactly as they are read, zero-padded, at the edges of the calendar too.
    @Test(arguments: [
        "1970-01-01T00:00:00Z", "0001-01-01T00:00:00Z", "0999-09-09T09:09:09Z", "2024-02-29T23:59:59Z",
        "2026-11-21T14:05:07Z", "9999-12-31T23:59:59Z",
    ])
    func printsAsRead(text: String) throws {
        #expect(try #require(Timestamp(iso8601: text)).iso8601 == text)
    }

    /// A year past four digits still prints, in its own width.
    @Test func yearPastFourDigits() {
        #expect(Timestamp(secondsSince1970: 253_402_300_800).iso8601 == "10000-01-01T00:00:00Z")
    }
}
