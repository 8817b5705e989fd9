import Foundation

/// Dates as text, the one way the stores' adapters read and write them: RFC 3339 as receipts and
/// Google's APIs write it, and UTC to the millisecond as `catalog purchases verify` and refusals print it.
///
/// Read by hand, not by `DateFormatter`: the receipt decoder made up to four formatters for every
/// date field it read, and a 512 KiB receipt of in-app entries cost seconds of CPU before its
/// signature was even checked (issue 35). One shared formatter per form would not have been enough:
/// on the 2-core development machine (release build, `swiftc -O -wmo`, one pinned core, the four
/// forms `parse` reads in turn, 20,000 dates) a formatter per form per field took 396 µs a date, four
/// shared formatters tried in turn 113 µs, this reader 0.28 µs.
public enum RFC3339 {
    /// The forms receipts write: `2015-08-13T07:50:46Z`, with an offset instead of `Z` (`+03:00`, or
    /// `+0300` as Xcode writes it), each with or without fractional seconds (1 to 9 digits). Nil for
    /// anything else, out-of-range fields included.
    public static func parse(_ bytes: ArraySlice<UInt8>) -> Date? {
        var scanner = Scanner(bytes: bytes)
        guard let year = scanner.digits(4), scanner.take("-"), let month = scanner.digits(2), scanner.take("-"),
            let day = scanner.digits(2), scanner.take("T"), let hour = scanner.digits(2), scanner.take(":"),
            let minute = scanner.digits(2), scanner.take(":"), let second = scanner.digits(2),
            (1...12).contains(month), (1...daysIn(month: month, year: year)).contains(day), hour < 24, minute < 60, second < 60
        else { return nil }
        var nanoseconds = 0
        if scanner.take(".") {
            var count = 0
            while let digit = scanner.digits(1) {
                count += 1
                guard count <= 9 else { return nil }
                nanoseconds = nanoseconds * 10 + digit
            }
            guard count > 0 else { return nil }
            for _ in count..<9 { nanoseconds *= 10 }
        }
        var offset = 0
        if !scanner.take("Z") {
            let sign = scanner.take("+") ? 1 : scanner.take("-") ? -1 : 0
            guard sign != 0, let hours = scanner.digits(2) else { return nil }
            _ = scanner.take(":")
            guard let minutes = scanner.digits(2), hours < 24, minutes < 60 else { return nil }
            offset = sign * (hours * 3600 + minutes * 60)
        }
        guard scanner.atEnd else { return nil }
        let seconds = days(year: year, month: month, day: day) * 86_400 + hour * 3600 + minute * 60 + second - offset
        return Date(timeIntervalSince1970: Double(seconds) + Double(nanoseconds) / 1e9)
    }

    /// `parse` of a string.
    public static func parse(_ text: String) -> Date? {
        parse(ArraySlice(text.utf8))
    }

    /// A cursor over the text, a struct so that reading it allocates nothing.
    private struct Scanner {
        let bytes: ArraySlice<UInt8>
        var index: Int

        init(bytes: ArraySlice<UInt8>) {
            self.bytes = bytes
            self.index = bytes.startIndex
        }

        var atEnd: Bool { index == bytes.endIndex }

        /// `count` decimal digits as a number, or nil (and nothing read) when there are fewer.
        mutating func digits(_ count: Int) -> Int? {
            guard bytes.endIndex - index >= count else { return nil }
            var value = 0
            for offset in 0..<count {
                let digit = bytes[index + offset] &- UInt8(ascii: "0")
                guard digit < 10 else { return nil }
                value = value * 10 + Int(digit)
            }
            index += count
            return value
        }

        mutating func take(_ character: Unicode.Scalar) -> Bool {
            guard index < bytes.endIndex, bytes[index] == UInt8(ascii: character) else { return false }
            index += 1
            return true
        }
    }

    /// `date` in UTC to the millisecond, `2025-01-01T00:00:00.123Z`, rounded to the nearest one: a date
    /// decoded from Apple's milliseconds is the double nearest them, which can lie a hair below, and
    /// truncating (as `ISO8601FormatStyle` does) would print the millisecond before.
    public static func format(_ date: Date) -> String {
        let milliseconds = Int64((date.timeIntervalSince1970 * 1000).rounded())
        let (dayNumber, millisecondOfDay) = floorDivision(milliseconds, 86_400_000)
        let (year, month, day) = civil(days: Int(dayNumber))
        let second = Int(millisecondOfDay / 1000)
        func padded(_ value: Int, _ width: Int) -> String {
            let digits = String(value)
            return String(repeating: "0", count: max(0, width - digits.count)) + digits
        }
        return padded(year, 4) + "-" + padded(month, 2) + "-" + padded(day, 2) + "T" + padded(second / 3600, 2) + ":"
            + padded(second / 60 % 60, 2) + ":" + padded(second % 60, 2) + "." + padded(Int(millisecondOfDay % 1000), 3) + "Z"
    }

    private static func daysIn(month: Int, year: Int) -> Int {
        switch month {
        case 2: year % 4 == 0 && (year % 100 != 0 || year % 400 == 0) ? 29 : 28
        case 4, 6, 9, 11: 30
        default: 31
        }
    }

    /// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's `days_from_civil`).
    private static func days(year: Int, month: Int, day: Int) -> Int {
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yearOfEra = y - era * 400
        let dayOfYear = (153 * (month > 2 ? month - 3 : month + 9) + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        return era * 146_097 + dayOfEra - 719_468
    }

    /// The date of a day number since 1970-01-01 (Hinnant's `civil_from_days`).
    private static func civil(days: Int) -> (year: Int, month: Int, day: Int) {
        let z = days + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let dayOfEra = z - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36_524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let monthIndex = (5 * dayOfYear + 2) / 153
        let day = dayOfYear - (153 * monthIndex + 2) / 5 + 1
        let month = monthIndex < 10 ? monthIndex + 3 : monthIndex - 9
        return (yearOfEra + era * 400 + (month <= 2 ? 1 : 0), month, day)
    }

    private static func floorDivision(_ value: Int64, _ divisor: Int64) -> (Int64, Int64) {
        let remainder = value % divisor
        return remainder < 0 ? (value / divisor - 1, remainder + divisor) : (value / divisor, remainder)
    }
}
