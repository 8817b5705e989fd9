import Time

/// HTTP dates (RFC 9110 §5.6.7): always sent as IMF-fixdate, read in all three forms.
public enum HTTPDate {
    static let dayNames = Timestamp.dayNames
    static let longDayNames = ["Sunday", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday"]
    static let monthNames = Timestamp.monthNames

    /// `Sun, 06 Nov 1994 08:49:37 GMT` (``Timestamp/imfFixdate``).
    public static func format(_ moment: Timestamp) -> String { moment.imfFixdate }

    /// Parses IMF-fixdate, the obsolete RFC 850 form and asctime; nil for anything else.
    ///
    /// RFC 850 has two-digit years: one that would be more than 50 years after `now` is read as
    /// the most recent past year with the same last two digits, as §5.6.7 requires.
    public static func parse(_ text: some StringProtocol, now: Timestamp) -> Timestamp? {
        let value = text.trimmingHTTPWhitespace()
        let parts = value.split(separator: " ", omittingEmptySubsequences: true).map(String.init)
        // IMF-fixdate: Sun, 06 Nov 1994 08:49:37 GMT
        if parts.count == 6, parts[5] == "GMT", parts[0].count == 4, parts[0].hasSuffix(","),
            dayNames.contains(String(parts[0].dropLast())), parts[1].count == 2, parts[3].count == 4,
            value.split(separator: " ", omittingEmptySubsequences: false).count == 6
        {
            return moment(day: parts[1], month: parts[2], year: Int(parts[3]), time: parts[4])
        }
        // RFC 850: Sunday, 06-Nov-94 08:49:37 GMT
        if parts.count == 4, parts[3] == "GMT", parts[0].hasSuffix(","), longDayNames.contains(String(parts[0].dropLast())) {
            let date = parts[1].split(separator: "-", omittingEmptySubsequences: false).map(String.init)
            guard date.count == 3, date[0].count == 2, date[2].count == 2, let twoDigits = Int(date[2]) else { return nil }
            let currentYear = now.components.year
            var year = currentYear / 100 * 100 + twoDigits
            if year > currentYear + 50 { year -= 100 }
            return moment(day: date[0], month: date[1], year: year, time: parts[2])
        }
        // asctime: Sun Nov  6 08:49:37 1994 (a one-digit day is padded with a space)
        if parts.count == 5, dayNames.contains(parts[0]), (1...2).contains(parts[2].count), parts[4].count == 4 {
            return moment(day: parts[2], month: parts[1], year: Int(parts[4]), time: parts[3])
        }
        return nil
    }

    private static func moment(day: String, month: String, year: Int?, time: String) -> Timestamp? {
        let clock = time.split(separator: ":", omittingEmptySubsequences: false)
        guard let year, let monthIndex = monthNames.firstIndex(of: month), day.allSatisfy(\.isASCIIDigit),
            let dayNumber = Int(day), clock.count == 3, clock.allSatisfy({ $0.count == 2 && $0.allSatisfy(\.isASCIIDigit) }),
            let hour = Int(clock[0]), let minute = Int(clock[1]), let second = Int(clock[2])
        else { return nil }
        // Leap seconds (":60") are allowed by the grammar; they are read as the next second's start.
        if second == 60 {
            return Timestamp(year: year, month: monthIndex + 1, day: dayNumber, hour: hour, minute: minute, second: 59)
                .map { Timestamp(secondsSince1970: $0.secondsSince1970 + 1) }
        }
        return Timestamp(year: year, month: monthIndex + 1, day: dayNumber, hour: hour, minute: minute, second: second)
    }
}

extension Character {
    fileprivate var isASCIIDigit: Bool { isASCII && isNumber }
}

extension StringProtocol {
    /// Without leading and trailing spaces and tabs (HTTP's optional whitespace).
    func trimmingHTTPWhitespace() -> String {
        var slice = Substring(self)
        while let first = slice.first, first == " " || first == "\t" { slice = slice.dropFirst() }
        while let last = slice.last, last == " " || last == "\t" { slice = slice.dropLast() }
        return String(slice)
    }
}
