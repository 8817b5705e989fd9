import PropertyList

/// The policy's rules (PRODUCT.md section 4), pure: the same reports, moment and previous
/// verdict always give the same verdict.
extension FeedbackPolicy {
    /// Where the counting window of a run at `now` starts.
    public func windowStart(at now: Timestamp) -> Timestamp {
        Timestamp(secondsSince1970: now.secondsSince1970 - windowHours * 3600)
    }

    /// The moment from which an identifier's reports count: the latest of the window's start,
    /// the end of its grace period and its release.
    ///
    /// - Parameters:
    ///   - firstPublishedAt: when a published revision first offered it. An identifier that was
    ///     never published has no grace period: apps can only have it from elsewhere (their
    ///     bundle, say), so the store's answers about it are not propagation noise of ours.
    ///   - releasedAt: when an editor last released it. Counting starts the second after, so
    ///     that no report received in the release's own second (timestamps have one-second
    ///     resolution) brings it straight back.
    public func countingStart(at now: Timestamp, firstPublishedAt: Timestamp?, releasedAt: Timestamp?) -> Timestamp {
        var start = windowStart(at: now)
        if let firstPublishedAt {
            start = max(start, Timestamp(secondsSince1970: firstPublishedAt.secondsSince1970 + graceHours * 3600))
        }
        if let releasedAt { start = max(start, Timestamp(secondsSince1970: releasedAt.secondsSince1970 + 1)) }
        return start
    }

    /// The verdict on one identifier at `now`, nil when there is none.
    ///
    /// - Parameters:
    ///   - aggregates: the identifier's reports received from `countedFrom` on.
    ///   - previous: its verdict before this run. A quarantine holds, reason and evidence
    ///     included, until an editor releases it: a quarantined identifier is no longer offered,
    ///     so its reports stop, and re-judging it would put it back on sale within a window.
    public func verdict(for aggregates: [ReportAggregate], countedFrom: Timestamp, at now: Timestamp, previous: Verdict?) -> Verdict? {
        if let previous, previous.status == .quarantined { return previous }
        guard let evidence = VerdictEvidence(aggregates, countedFrom: countedFrom) else { return nil }
        let installs = evidence.installs
        let rate = VerdictEvidence.invalidRate(of: aggregates)
        let period =
            countedFrom == windowStart(at: now) ? "in the last \(windowHours) h" : "since \(countedFrom.iso8601)"
        let shownRate = evidence.invalidRate.map { ", invalid rate \($0)" } ?? ""

        // Only production answers quarantine; when clients said what they requested, the store
        // must also have refused most of those requests (it sometimes refuses valid ids at random).
        let rateAllows = rate.map { $0 >= minimumInvalidRate } ?? true
        if Int64(installs.production) >= quarantineAfterInstalls && rateAllows {
            return Verdict(
                status: .quarantined,
                reason: "reported invalid by \(installs.production) production installs \(period)\(shownRate)",
                since: now, evidence: evidence)
        }
        guard Int64(installs.total) >= suspectAfterInstalls else { return nil }
        let split = installs.nonZero.map { "\($0.count) \($0.name)" }.joined(separator: ", ")
        var reason = "reported invalid by \(installs.total) installs (\(split)) \(period)\(shownRate)"
        if Int64(installs.production) >= quarantineAfterInstalls {
            reason += ", below the \(minimumInvalidRate) needed to quarantine"
        }
        // A suspect stays suspect since it first became one (a previous verdict here is a suspect).
        return Verdict(status: .suspect, reason: reason, since: previous?.since ?? now, evidence: evidence)
    }
}
