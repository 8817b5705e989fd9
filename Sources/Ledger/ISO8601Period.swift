import Foundation

/// An ISO 8601 period of whole years, months, weeks and days (`P1M`, `P1Y`, `P2W3D`), as the catalog
/// writes a non-renewing subscription's `duration` and Apple writes `offerPeriod`.
public struct ISO8601Period: Sendable, Hashable, CustomStringConvertible {
    /// Years.
    public var years: Int
    /// Months.
    public var months: Int
    /// Weeks.
    public var weeks: Int
    /// Days.
    public var days: Int

    /// Reads `P` then numbers of years, months, weeks and days, in that order, each at most once;
    /// nil for anything else (times of day included: no store sells by the hour).
    public init?(_ text: String) {
        var rest = Substring(text)
        guard rest.first == "P", rest.count > 1 else { return nil }
        rest = rest.dropFirst()
        var values: [Character: Int] = [:]
        var order: ArraySlice<Character> = ["Y", "M", "W", "D"]
        while !rest.isEmpty {
            let digits = rest.prefix { $0.isASCII && $0.isNumber }
            guard !digits.isEmpty, digits.count <= 4, let number = Int(digits) else { return nil }
            rest = rest.dropFirst(digits.count)
            guard let unit = rest.first, let index = order.firstIndex(of: unit) else { return nil }
            values[unit] = number
            order = order[(index + 1)...]
            rest = rest.dropFirst()
        }
        years = values["Y"] ?? 0
        months = values["M"] ?? 0
        weeks = values["W"] ?? 0
        days = values["D"] ?? 0
    }

    /// The period's text, in the canonical order.
    public var description: String {
        var text = "P"
        for (value, unit) in [(years, "Y"), (months, "M"), (weeks, "W"), (days, "D")] where value != 0 { text += "\(value)\(unit)" }
        return text == "P" ? "P0D" : text
    }

    /// `date` moved on by this period in the Gregorian calendar in UTC, as the App Store counts a
    /// subscription's months (31 January plus one month is the end of February).
    public func added(to date: Date) -> Date {
        moved(date, by: 1)
    }

    /// `date` moved back by this period, as ``added(to:)`` moves it on: where a period that ends at
    /// `date` began (Google Play says when a period ends).
    public func subtracted(from date: Date) -> Date {
        moved(date, by: -1)
    }

    private func moved(_ date: Date, by sign: Int) -> Date {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(identifier: "UTC") ?? calendar.timeZone
        let components = DateComponents(year: sign * years, month: sign * months, day: sign * (weeks * 7 + days))
        return calendar.date(byAdding: components, to: date) ?? date
    }
}
