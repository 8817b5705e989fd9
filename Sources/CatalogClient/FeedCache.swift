import Foundation

/// A feed body as last received, with what revalidating and judging its freshness need.
struct CachedFeed: Sendable, Hashable {
    struct Header: Codable, Sendable, Hashable {
        /// The feed URL, checked on load: the file name is only a hash of it.
        var url: String
        var entityTag: String?
        var lastModified: String?
        /// When the server last sent or confirmed the body.
        var validatedAt: Date
        /// Until when it may be used without asking; nil: ask every time.
        var freshUntil: Date?
        /// The seconds of freshness the server gave, kept for a 304 that does not repeat them.
        var freshnessLifetime: TimeInterval?
        /// The feed's detached JWS, when signatures are checked: verified again on every load.
        var signature: String?
    }

    var header: Header
    var body: Data

    /// Fresh per the server's `max-age`. A clock set back before the validation counts as stale,
    /// so that a wrong clock costs a revalidation rather than hiding a new revision.
    func isFresh(at now: Date) -> Bool {
        guard let freshUntil = header.freshUntil else { return false }
        return header.validatedAt <= now && now < freshUntil
    }
}

/// Feed bodies on disk, one file per feed URL: a line of JSON with the validators, then the body,
/// replaced as a whole (``DurableFile``) so that a killed app never leaves a torn entry.
struct FeedCache: Sendable {
    let directory: URL

    func load(_ url: URL) -> CachedFeed? {
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .millisecondsSince1970
        guard let data = try? Data(contentsOf: file(for: url)),
            let newline = data.firstIndex(of: UInt8(ascii: "\n")),
            let header = try? decoder.decode(CachedFeed.Header.self, from: data[data.startIndex..<newline]),
            header.url == url.absoluteString
        else { return nil }
        return CachedFeed(header: header, body: Data(data[(newline + 1)...]))
    }

    func store(_ feed: CachedFeed, for url: URL) throws {
        try DurableFile.makeDirectory(directory)
        let encoder = JSONEncoder()
        encoder.dateEncodingStrategy = .millisecondsSince1970
        // JSONEncoder without pretty-printing writes one line: escaped newlines only.
        var data = try encoder.encode(feed.header)
        data.append(UInt8(ascii: "\n"))
        data.append(feed.body)
        try DurableFile.write(data, to: file(for: url))
    }

    func remove(_ url: URL) {
        try? FileManager.default.removeItem(at: file(for: url))
    }

    /// FNV-1a of the URL: stable across launches and platforms (unlike `hashValue`), and Foundation
    /// has no portable digest. A collision is caught by the URL kept in the header.
    private func file(for url: URL) -> URL {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in url.absoluteString.utf8 {
            hash ^= UInt64(byte)
            hash = hash &* 0x100_0000_01b3
        }
        let hex = String(hash, radix: 16)
        return directory.appendingPathComponent(String(repeating: "0", count: 16 - hex.count) + hex + ".feed")
    }
}
