import Time

/// Which future moments a build publishes feeds for, so that sale windows open and close on time
/// without a rebuild (docs/contract.md section 2).
///
/// Bounded so that a catalog with thousands of distant dates does not publish thousands of
/// states: changes within `horizonDays` ahead, at most `maximumStates` of them. A change beyond
/// the bound needs a build before it happens; the build says so.
public enum ScheduleRules {
    /// How far ahead of the build changes are scheduled, in days.
    public static let horizonDays: Int64 = 400
    /// The most scheduled changes one revision publishes.
    public static let maximumStates = 16

    /// The moments after `moment` at which a sale window of `catalog` opens or closes (cleared
    /// products not quarantined only).
    ///
    /// - Returns: the moments to schedule, ascending, and the first change beyond the bound, which
    ///   needs a build before it happens; nil when every change is scheduled.
    public static func moments(of catalog: AppCatalog, after moment: Timestamp) -> (scheduled: [Timestamp], firstUnscheduled: Timestamp?) {
        var upcoming = Set<Timestamp>()
        // Fields read in place: a product taken whole is copied, which for a big catalog costs
        // more than the rest of this.
        let products = catalog.products
        for index in products.indices where products[index].status == .cleared && !products.isQuarantined(at: index) {
            if let from = products[index].availableFrom, from > moment { upcoming.insert(from) }
            if let until = products[index].availableUntil, until > moment { upcoming.insert(until) }
        }
        let sorted = upcoming.sorted()
        let horizon = Timestamp(secondsSince1970: moment.secondsSince1970 + horizonDays * 86_400)
        let scheduled = Array(sorted.prefix { $0 <= horizon }.prefix(maximumStates))
        return (scheduled, sorted.dropFirst(scheduled.count).first)
    }
}
