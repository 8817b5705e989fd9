import Time

/// The policy's rules (docs/contract.md section 4), pure: the same reports, moment and previous
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
    ///   - now: the moment of the judgement; the policy's window ends there.
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

    /// The verdict on one identifier at `now`, nil when there is none, by its own evidence alone:
    /// the app-level rules (store-wide failures, the quarantine budget) come after, in
    /// ``FeedbackLoop``.
    ///
    /// - Parameters:
    ///   - aggregates: the identifier's reports received from `countedFrom` on.
    ///   - network: its quarantine evidence over the same reports: only production reports that
    ///     said what they requested and had some of it answered valid, counted by network; and
    ///     its invalid rate, counted by network too.
    ///   - countedFrom: the first moment its reports count from (``countingStart(at:firstPublishedAt:releasedAt:)``).
    ///   - now: the moment of the judgement.
    ///   - previous: its verdict before this run. A quarantine holds, reason and evidence
    ///     included, until an editor releases it: a quarantined identifier is no longer offered,
    ///     so its reports stop, and re-judging it would put it back on sale within a window.
    public func verdict(
        for aggregates: [ReportAggregate], network: NetworkEvidence?, countedFrom: Timestamp, at now: Timestamp, previous: Verdict?
    ) -> Verdict? {
        if let previous, previous.status == .quarantined { return previous }
        guard let evidence = VerdictEvidence(aggregates, network: network, countedFrom: countedFrom) else { return nil }
        let installs = evidence.installs
        let rate = network?.invalidRate
        let period =
            countedFrom == windowStart(at: now) ? "in the last \(windowHours) h" : "since \(countedFrom.iso8601)"
        let shownRate = evidence.invalidRate.map { ", invalid rate \($0)" } ?? ""

        // Only production answers from distinct networks (or verified installs) quarantine; the
        // store must also have refused most of the requests for it (it sometimes refuses valid
        // ids at random), each network one voice so that none can outvote the others.
        let rateAllows = rate.map { $0 >= minimumInvalidRate } ?? true
        let hasQuarantineEvidence = Int64(evidence.countedInstalls) >= quarantineAfterInstalls
        if hasQuarantineEvidence && rateAllows {
            return Verdict(
                status: .quarantined, reason: "reported invalid by \(Self.sources(of: evidence)) \(period)\(shownRate)", since: now,
                evidence: evidence)
        }
        guard Int64(installs.total) >= suspectAfterInstalls else { return nil }
        let split = installs.nonZero.map { "\($0.count) \($0.name)" }.joined(separator: ", ")
        var reason = "reported invalid by \(installs.total) installs (\(split)) \(period)\(shownRate)"
        if hasQuarantineEvidence {
            reason += ", below the \(minimumInvalidRate) needed to quarantine"
        }
        // A suspect stays suspect since it first became one (a previous verdict here is a suspect).
        return Verdict(status: .suspect, reason: reason, since: previous?.since ?? now, evidence: evidence)
    }

    /// `20 production installs from 20 networks and 3 verified installs`.
    static func sources(of evidence: VerdictEvidence) -> String {
        var parts: [String] = []
        if evidence.networks > 0 {
            parts.append(
                "\(counted(evidence.networkInstalls, "production install")) from \(counted(evidence.networks, "network"))")
        }
        if evidence.verifiedInstalls > 0 { parts.append(counted(evidence.verifiedInstalls, "verified install")) }
        return parts.isEmpty ? "no counted installs" : parts.joined(separator: " and ")
    }

    /// The quarantine budget of an app selling `sellable` identifiers: at least one.
    public func quarantineBudget(sellable: Int) -> Int {
        max(1, Int((Double(sellable) * quarantineBudget).rounded(.down)))
    }
}

/// `1 network`, `3 networks`.
func counted(_ count: Int, _ noun: String) -> String {
    "\(count) \(noun)\(count == 1 ? "" : "s")"
}
