#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// A moment in UTC with one-second resolution, the resolution of plist dates and HTTP dates.
///
/// Parsed and printed without Foundation's date formatters: they are slow, and their
/// leniency would let malformed dates through.
public struct Timestamp: Sendable, Hashable, Comparable, Codable, CustomStringConvertible {
    /// Whole seconds since 1970-01-01T00:00:00Z, negative before it.
    public var secondsSince1970: Int64

    /// The moment `secondsSince1970` seconds after the epoch.
    public init(secondsSince1970: Int64) {
        self.secondsSince1970 = secondsSince1970
    }

    /// The current moment, truncated to the second.
    public static var now: Timestamp {
        Timestamp(secondsSince1970: Int64(time(nil)))
    }

    public static func < (lhs: Timestamp, rhs: Timestamp) -> Bool {
        lhs.secondsSince1970 < rhs.secondsSince1970
    }

    /// Encoded as `YYYY-MM-DDTHH:MM:SSZ`, so that manifests read well.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        let text = try container.decode(String.self)
        guard let value = Timestamp(iso8601: text) else {
            throw DecodingError.dataCorruptedError(in: container, debugDescription: "'\(text)' is not YYYY-MM-DDTHH:MM:SSZ")
        }
        self = value
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(iso8601)
    }

    /// Parses exactly `YYYY-MM-DDTHH:MM:SSZ`, the form of plist `<date>`, rejecting impossible values.
    public init?(iso8601 text: some StringProtocol) {
        let utf8 = Array(text.utf8)
        guard utf8.count == 20 else { return nil }
        func number(_ from: Int, _ count: Int) -> Int? {
            var value = 0
            for index in from..<from + count {
                let digit = Int(utf8[index]) - 48
                guard (0...9).contains(digit) else { return nil }
                value = value * 10 + digit
            }
            return value
        }
        guard utf8[4] == UInt8(ascii: "-"), utf8[7] == UInt8(ascii: "-"), utf8[10] == UInt8(ascii: "T"),
            utf8[13] == UInt8(ascii: ":"), utf8[16] == UInt8(ascii: ":"), utf8[19] == UInt8(ascii: "Z"),
            let year = number(0, 4), let month = number(5, 2), let day = number(8, 2),
            let hour = number(11, 2), let minute = number(14, 2), let second = number(17, 2)
        else { return nil }
        guard
            let timestamp = Timestamp(
                year: year, month: month, day: day, hour: hour, minute: minute, second: second)
        else { return nil }
        self = timestamp
    }

    /// A timestamp from calendar fields in UTC, or nil if they name no real moment.
    public init?(year: Int, month: Int, day: Int, hour: Int, minute: Int, second: Int) {
        guard (1...12).contains(month), (1...Timestamp.daysIn(month: month, year: year)).contains(day),
            (0...23).contains(hour), (0...59).contains(minute), (0...59).contains(second)
        else { return nil }
        let days = Timestamp.daysFromCivil(year: year, month: month, day: day)
        secondsSince1970 = Int64(days) * 86_400 + Int64(hour * 3600 + minute * 60 + second)
    }

    /// The number of days in `month` (1 to 12) of `year`, leap years included.
    public static func daysIn(month: Int, year: Int) -> Int {
        switch month {
        case 2: return (year % 4 == 0 && year % 100 != 0) || year % 400 == 0 ? 29 : 28
        case 4, 6, 9, 11: return 30
        default: return 31
        }
    }

    /// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's algorithm).
    static func daysFromCivil(year: Int, month: Int, day: Int) -> Int {
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yearOfEra = y - era * 400
        let dayOfYear = (153 * (month + (month > 2 ? -3 : 9)) + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        return era * 146_097 + dayOfEra - 719_468
    }

    /// The calendar fields of this moment in UTC.
    public var components: (year: Int, month: Int, day: Int, hour: Int, minute: Int, second: Int, weekday: Int) {
        let days = Int(secondsSince1970 >= 0 ? secondsSince1970 / 86_400 : (secondsSince1970 - 86_399) / 86_400)
        let secondOfDay = Int(secondsSince1970 - Int64(days) * 86_400)
        let z = days + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let dayOfEra = z - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36_524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let mp = (5 * dayOfYear + 2) / 153
        let day = dayOfYear - (153 * mp + 2) / 5 + 1
        let month = mp < 10 ? mp + 3 : mp - 9
        let year = yearOfEra + era * 400 + (month <= 2 ? 1 : 0)
        // 1970-01-01 was a Thursday; 0 is Sunday.
        let weekday = ((days % 7) + 11) % 7
        return (year, month, day, secondOfDay / 3600, secondOfDay / 60 % 60, secondOfDay % 60, weekday)
    }

    /// `YYYY-MM-DDTHH:MM:SSZ`.
    public var iso8601: String {
        let c = components
        guard (0...9999).contains(c.year) else {
            return
                "\(Self.pad(c.year, 4))-\(Self.pad(c.month, 2))-\(Self.pad(c.day, 2))T\(Self.pad(c.hour, 2)):\(Self.pad(c.minute, 2)):\(Self.pad(c.second, 2))Z"
        }
        // Digits written in place: a big build formats hundreds of thousands of dates, and
        // interpolating padded strings cost several allocations each.
        return String(unsafeUninitializedCapacity: 20) { text in
            var end = 0
            func field(_ value: Int, width: Int, then separator: Unicode.Scalar) {
                var value = value
                for index in (end..<end + width).reversed() {
                    text[index] = UInt8(ascii: "0") + UInt8(value % 10)
                    value /= 10
                }
                text[end + width] = UInt8(ascii: separator)
                end += width + 1
            }
            field(c.year, width: 4, then: "-")
            field(c.month, width: 2, then: "-")
            field(c.day, width: 2, then: "T")
            field(c.hour, width: 2, then: ":")
            field(c.minute, width: 2, then: ":")
            field(c.second, width: 2, then: "Z")
            return end
        }
    }

    public var description: String { iso8601 }
}

extension Timestamp {
    /// `value` in decimal with leading zeros up to `width` digits, as date formats write numbers.
    public static func zeroPadded(_ value: Int, width: Int) -> String {
        let digits = String(value)
        return digits.count >= width ? digits : String(repeating: "0", count: width - digits.count) + digits
    }

    private static func pad(_ value: Int, _ width: Int) -> String { zeroPadded(value, width: width) }
}

extension Timestamp {
    /// The days of the week as IMF-fixdate names them, Sunday first (``components``' `weekday`).
    public static let dayNames = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"]
    /// The months as IMF-fixdate names them, January first.
    public static let monthNames = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]

    /// The moment as IMF-fixdate, `Sun, 06 Nov 1994 08:49:37 GMT`: the form HTTP sends its dates in
    /// (RFC 9110 §5.6.7). Here, in the leaf, so that the domain can keep a feed's Last-Modified
    /// formatted once, at load, without knowing HTTP; `HTTPSemantics.HTTPDate` reads every form.
    public var imfFixdate: String {
        let c = components
        return "\(Self.dayNames[c.weekday]), \(Self.pad(c.day, 2)) \(Self.monthNames[c.month - 1]) \(Self.pad(c.year, 4)) "
            + "\(Self.pad(c.hour, 2)):\(Self.pad(c.minute, 2)):\(Self.pad(c.second, 2)) GMT"
    }
}
