import CatalogKit
import FeedSigning
import HTTPSemantics
import Time

/// A feed response decided from the request alone: status, headers in order, and body.
///
/// Pure, so that every header rule is tested without a server (RFC 9110 §8.8, §13, §15.4.5):
/// strong ETag and Last-Modified on every 200 and 304; a 304 carries ETag, Last-Modified,
/// Cache-Control, Vary and Date but no body or Content-Type; HEAD is GET without the body;
/// `Vary: Accept-Encoding` always; gzip when accepted, with its own ETag.
public struct FeedResponse: Sendable {
    /// The HTTP status: 200, 304 or 412.
    public var status: Int
    /// The response headers, in the order they are sent.
    public var headers: [(name: String, value: String)]
    /// The body; nil for a 304, a 412 and a HEAD.
    public var body: [UInt8]?
    /// Which representation answers, and how: a server that keeps the representations in
    /// buffers of its own sends its buffer for `choice.gzip` where `body` is not nil.
    public var choice: Choice

    /// The value of the first header named `name`, compared case-insensitively; nil when there is none.
    public func header(_ name: String) -> String? {
        headers.first { $0.name.lowercased() == name.lowercased() }?.value
    }

    /// What every request needs decided before anything is written: which encoding answers,
    /// and with which status (200, 304, or 412 for an unsafe method).
    public struct Choice: Sendable, Hashable {
        /// Whether the gzip copy answers, rather than the identity bytes.
        public var gzip: Bool
        /// The status: 200, 304, or 412 for an unsafe method.
        public var status: Int
    }

    /// The response header that carries a signed feed's detached JWS.
    public static let signatureHeader = FeedSigner.httpHeader

    /// Decides which encoding answers a request for `feed`, and with which status.
    ///
    /// - Parameters:
    ///   - feed: the feed asked for.
    ///   - conditions: the request's validators.
    ///   - acceptEncoding: each Accept-Encoding field line as received.
    ///   - now: the server's clock.
    public static func choose(feed: ServedFeed, conditions: ConditionalRequest, acceptEncoding: [String], now: Timestamp) -> Choice {
        let gzip = AcceptEncoding.acceptsGzip(acceptEncoding)
        let representation = gzip ? feed.gzip : feed.identity
        let outcome = conditions.evaluate(
            entityTag: representation.entityTag, lastModified: feed.lastModified, lastModifiedHeader: feed.lastModifiedHeader, now: now)
        switch outcome {
        case .notModified: return Choice(gzip: gzip, status: 304)
        case .preconditionFailed: return Choice(gzip: gzip, status: 412)
        case .send: return Choice(gzip: gzip, status: 200)
        }
    }

    /// The headers of the response `choice` makes, in order; the body, if any, is the chosen
    /// representation's bytes.
    ///
    /// - Parameters:
    ///   - feed: the feed answered.
    ///   - choice: the encoding and status ``choose(feed:conditions:acceptEncoding:now:)`` decided.
    ///   - now: the server's clock, for the Date header.
    ///   - cacheControl: the Cache-Control value to send.
    ///   - dateLag: how far behind `now` the Date header the server sends may be. The
    ///     Last-Modified header is never later than Date (§8.8.2.1), so a feed published less than
    ///     that long ago shows `now - dateLag`; conditions are still evaluated against its true time.
    public static func headers(
        feed: ServedFeed, choice: Choice, now: Timestamp, cacheControl: String, dateLag: Int64 = 0
    ) -> [(name: String, value: String)] {
        let date = HTTPDate.format(now)
        guard choice.status != 412 else { return [("Date", date)] }
        let representation = choice.gzip ? feed.gzip : feed.identity
        let latestShown = Timestamp(secondsSince1970: now.secondsSince1970 - dateLag)
        let lastModifiedHeader = feed.lastModified <= latestShown ? feed.lastModifiedHeader : HTTPDate.format(latestShown)
        var headers: [(name: String, value: String)] = [
            ("Date", date),
            ("ETag", representation.entityTag),
            ("Last-Modified", lastModifiedHeader),
            ("Cache-Control", cacheControl),
            ("Vary", "Accept-Encoding"),
        ]
        // On a 304 too: a signature re-issued over unchanged bytes reaches a client that
        // revalidates, which keeps its freeze check satisfied without a download.
        if let signature = feed.signature { headers.append((signatureHeader, signature)) }
        if choice.status == 200 {
            headers.append(("Content-Type", "application/json"))
            if choice.gzip { headers.append(("Content-Encoding", "gzip")) }
            headers.append(("Content-Length", String(representation.bytes.count)))
        }
        return headers
    }

    /// The response to a GET or HEAD for `feed`.
    public static func decide(
        feed: ServedFeed, conditions: ConditionalRequest, acceptEncoding: [String], isHead: Bool,
        now: Timestamp, cacheControl: String, dateLag: Int64 = 0
    ) -> FeedResponse {
        let choice = choose(feed: feed, conditions: conditions, acceptEncoding: acceptEncoding, now: now)
        let body = choice.status == 200 && !isHead ? (choice.gzip ? feed.gzip : feed.identity).bytes : nil
        return FeedResponse(
            status: choice.status, headers: headers(feed: feed, choice: choice, now: now, cacheControl: cacheControl, dateLag: dateLag),
            body: body, choice: choice)
    }
}

extension FeedIndex.LookupError {
    /// 404 for an app or a variant path that is not published, 400 for parameters that are not valid.
    public var status: Int {
        switch self {
        case .unknownApp, .unknownVariant: 404
        case .unknownPlatform, .malformedAppVersion: 400
        }
    }
}
