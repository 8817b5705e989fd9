import Time

/// The validators a client sent, and how they decide between a full response and 304.
///
/// RFC 9110 §13.1.2 (If-None-Match), §13.1.3 (If-Modified-Since) and §13.2.2 (their order),
/// as a pure function, so that every rule is tested without a server. Only safe methods reach
/// feeds, so If-Match and If-Unmodified-Since are not part of it.
public struct ConditionalRequest: Sendable, Hashable {
    /// Each If-None-Match field line as received.
    public var ifNoneMatch: [String]
    /// Each If-Modified-Since field line as received.
    public var ifModifiedSince: [String]
    /// GET or HEAD: If-Modified-Since applies to nothing else.
    public var isGetOrHead: Bool

    /// The validators of a request; by default none, for a GET or HEAD.
    public init(ifNoneMatch: [String] = [], ifModifiedSince: [String] = [], isGetOrHead: Bool = true) {
        self.ifNoneMatch = ifNoneMatch
        self.ifModifiedSince = ifModifiedSince
        self.isGetOrHead = isGetOrHead
    }

    /// What the conditions decide.
    public enum Outcome: Sendable, Hashable {
        /// Send the representation (200, or whatever the request would get without conditions).
        case send
        /// 304 Not Modified: validators and caching headers, no body.
        case notModified
        /// 412 Precondition Failed: If-None-Match matched on a method other than GET or HEAD.
        case preconditionFailed
    }

    /// Decides the response for a representation with `entityTag` and `lastModified`.
    ///
    /// - Parameters:
    ///   - entityTag: the representation's strong entity tag, quoted.
    ///   - lastModified: the representation's true modification time. It may be a moment ahead of
    ///     the clock (a publish pushes Last-Modified forward) and is compared as it is: a date the
    ///     client sent is never in the future, so such a representation is sent in full. The
    ///     header may show an earlier time (§8.8.2.1), which at worst costs one full response.
    ///   - wouldSucceed: whether the response without conditions would be 2xx; if not, every
    ///     condition is ignored (§13.2.1).
    ///   - lastModifiedHeader: `lastModified` as the server sends it, when the caller has it: a
    ///     client usually echoes it back, and then no date needs parsing.
    ///   - now: the server's clock, against which dates in the future are ignored.
    public func evaluate(
        entityTag: String, lastModified: Timestamp, lastModifiedHeader: String? = nil, now: Timestamp, wouldSucceed: Bool = true
    ) -> Outcome {
        guard wouldSucceed else { return .send }
        if !ifNoneMatch.isEmpty {
            // Present If-None-Match decides alone; If-Modified-Since is then ignored (§13.2.2).
            // The usual revalidation sends back exactly our tag: no list to parse.
            let matches =
                (ifNoneMatch.count == 1 && ifNoneMatch[0] == entityTag)
                || EntityTagList(fieldLines: ifNoneMatch).matchesWeakly(entityTag)
            guard matches else { return .send }
            return isGetOrHead ? .notModified : .preconditionFailed
        }
        // One member only: a second field line, or a value that is not one date, is ignored.
        guard isGetOrHead, ifModifiedSince.count == 1 else { return .send }
        let echoed = lastModifiedHeader != nil && ifModifiedSince[0] == lastModifiedHeader
        guard let since = echoed ? lastModified : HTTPDate.parse(ifModifiedSince[0], now: now), since <= now else {
            return .send
        }
        return lastModified <= since ? .notModified : .send
    }
}

/// An If-None-Match or If-Match value: `*`, or entity-tags separated by commas over one or more
/// field lines.
struct EntityTagList: Hashable {
    var isWildcard = false
    /// The opaque tags (quotes included), whatever their weakness, for weak comparison.
    var opaqueTags: [String] = []
    /// The tags sent without `W/`: only these can match strongly.
    var strongTags: [String] = []

    init(fieldLines: [String]) {
        for line in fieldLines {
            var rest = Substring(line)
            while true {
                rest = rest.drop { $0 == " " || $0 == "\t" || $0 == "," }
                if rest.isEmpty { break }
                if rest.first == "*" {
                    isWildcard = true
                    rest = rest.dropFirst()
                    continue
                }
                let isWeak = rest.hasPrefix("W/")
                if isWeak { rest = rest.dropFirst(2) }
                // An opaque tag runs from a quote to the next quote; commas may sit inside it.
                guard rest.first == "\"", let close = rest.dropFirst().firstIndex(of: "\"") else { break }
                opaqueTags.append(String(rest[rest.startIndex...close]))
                if !isWeak { strongTags.append(String(rest[rest.startIndex...close])) }
                rest = rest[rest.index(after: close)...]
            }
        }
    }

    /// Weak comparison (§8.8.3.2): opaque tags equal, `W/` ignored on either side.
    func matchesWeakly(_ entityTag: String) -> Bool {
        if isWildcard { return true }
        let opaque = entityTag.hasPrefix("W/") ? String(entityTag.dropFirst(2)) : entityTag
        return opaqueTags.contains(opaque)
    }
}

/// If-Match (RFC 9110 §13.1.1) for the editor API's changes, which must name the state they
/// were made from: strong comparison, so a weak tag never matches; `*` matches any current state.
public enum IfMatch {
    /// What If-Match decides for a change.
    public enum Outcome: Sendable, Hashable {
        /// No If-Match field: the change must not be made blind (428).
        case missing
        /// The current state is the one named, or `*` was sent: the change may be made.
        case matches
        /// The state moved (412).
        case fails
    }

    /// Compares each If-Match field line with the current strong `entityTag` (quotes included).
    public static func evaluate(_ fieldLines: [String], current entityTag: String) -> Outcome {
        guard !fieldLines.isEmpty else { return .missing }
        let list = EntityTagList(fieldLines: fieldLines)
        return list.isWildcard || list.strongTags.contains(entityTag) ? .matches : .fails
    }
}
