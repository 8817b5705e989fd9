import CatalogKit
import CatalogServer
import CatalogTestSupport
import Foundation
import HTTPSemantics
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Logging
import Synchronization
import Testing
import Time

/// The conditional rules through the wire: header lines as clients send them reach the pure
/// evaluation, and responses carry what RFC 9110 says.
@Suite struct ConditionalHTTPTests {
    /// A row: headers built from the served ETag and Last-Modified, and the expected status.
    struct Row: Sendable, CustomTestStringConvertible {
        var name: String
        var method: HTTPRequest.Method = .get
        var headers: @Sendable (_ etag: String, _ lastModified: Timestamp) -> [(String, String)]
        var expected: HTTPResponse.Status
        var testDescription: String { name }
    }

    static func rfc850(_ moment: Timestamp) -> String {
        let c = moment.components
        let days = ["Sunday", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday"]
        let months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]
        func pad(_ value: Int, _ width: Int) -> String { Timestamp.zeroPadded(value, width: width) }
        return
            "\(days[c.weekday]), \(pad(c.day, 2))-\(months[c.month - 1])-\(pad(c.year % 100, 2)) \(pad(c.hour, 2)):\(pad(c.minute, 2)):\(pad(c.second, 2)) GMT"
    }

    static func asctime(_ moment: Timestamp) -> String {
        let imf = HTTPDate.format(moment).split(separator: " ")  // Sun, 06 Nov 1994 08:49:37 GMT
        let day = Int(imf[1])!
        return "\(imf[0].dropLast()) \(imf[2]) \(day < 10 ? " \(day)" : "\(day)") \(imf[4]) \(imf[3])"
    }

    static let rows: [Row] = [
        Row(name: "no conditions", headers: { _, _ in [] }, expected: .ok),
        Row(name: "If-None-Match equal", headers: { etag, _ in [("If-None-Match", etag)] }, expected: .notModified),
        Row(name: "If-None-Match weak form", headers: { etag, _ in [("If-None-Match", "W/" + etag)] }, expected: .notModified),
        Row(name: "If-None-Match list", headers: { etag, _ in [("If-None-Match", #""a", \#(etag), "b""#)] }, expected: .notModified),
        Row(
            name: "If-None-Match over two lines", headers: { etag, _ in [("If-None-Match", #""a""#), ("If-None-Match", etag)] },
            expected: .notModified),
        Row(name: "If-None-Match star", headers: { _, _ in [("If-None-Match", "*")] }, expected: .notModified),
        Row(name: "If-None-Match other", headers: { _, _ in [("If-None-Match", #""other""#)] }, expected: .ok),
        Row(name: "HEAD revalidated", method: .head, headers: { etag, _ in [("If-None-Match", etag)] }, expected: .notModified),
        Row(
            name: "If-Modified-Since IMF-fixdate", headers: { _, lm in [("If-Modified-Since", HTTPDate.format(lm))] },
            expected: .notModified),
        Row(name: "If-Modified-Since RFC 850", headers: { _, lm in [("If-Modified-Since", rfc850(lm))] }, expected: .notModified),
        Row(name: "If-Modified-Since asctime", headers: { _, lm in [("If-Modified-Since", asctime(lm))] }, expected: .notModified),
        Row(
            name: "If-Modified-Since a second early",
            headers: { _, lm in
                [("If-Modified-Since", HTTPDate.format(Timestamp(secondsSince1970: lm.secondsSince1970 - 1)))]
            }, expected: .ok),
        Row(
            name: "If-Modified-Since in the future", headers: { _, _ in [("If-Modified-Since", "Fri, 01 Jan 2100 00:00:00 GMT")] },
            expected: .ok),
        Row(name: "If-Modified-Since invalid", headers: { _, _ in [("If-Modified-Since", "not a date")] }, expected: .ok),
        Row(
            name: "If-Modified-Since twice",
            headers: { _, lm in
                [("If-Modified-Since", HTTPDate.format(lm)), ("If-Modified-Since", HTTPDate.format(lm))]
            }, expected: .ok),
        Row(
            name: "If-None-Match decides over If-Modified-Since",
            headers: { _, lm in
                [("If-None-Match", #""other""#), ("If-Modified-Since", HTTPDate.format(lm))]
            }, expected: .ok),
    ]

    @Test(arguments: rows)
    func row(_ row: Row) async throws {
        let fixture = try CatalogServerTests.Fixture(ids: ["com.example.served.coins"])
        defer { fixture.remove() }
        let manifest = try #require(try fixture.publicTree.currentManifest(CatalogServerTests.app))
        let record = manifest.variants[0].products
        try await fixture.application().test(.live) { client in
            var headers = HTTPFields()
            for (name, value) in row.headers(record.entityTag, record.lastModified) {
                headers.append(HTTPField(name: HTTPField.Name(name)!, value: value))
            }
            let response = try await client.execute(uri: CatalogServerTests.feedPath, method: row.method, headers: headers)
            #expect(response.status == row.expected)
            #expect(response.headers[.eTag] == record.entityTag)
            #expect(response.headers[.vary] == "Accept-Encoding")
            if response.status == .notModified {
                #expect(response.body.readableBytes == 0 && response.headers[.contentType] == nil)
            }
        }
    }
}

/// Publishing while clients hammer the server: no request fails, and every response's body,
/// ETag and Last-Modified belong to one revision.
@Suite struct ReloadUnderLoadTests {
    @Test func responsesNeverMixRevisions() async throws {
        let fixture = try CatalogServerTests.Fixture(ids: ["com.example.served.r0"])
        defer { fixture.remove() }
        try await fixture.application(reloadInterval: .milliseconds(20)).test(.live) { client in
            // Clients run until every revision is published and they have made ten requests each:
            // how many requests fit in a given time depends on the machine, not on the server.
            let published = Flag()
            let results = try await withThrowingTaskGroup(of: [(Int, String, String, String, String)].self) { group in
                for _ in 0..<4 {
                    group.addTask {
                        var seen: [(Int, String, String, String, String)] = []
                        while !published.isSet || seen.count < 10 {
                            let response = try await client.execute(uri: CatalogServerTests.feedPath, method: .get)
                            seen.append(
                                (
                                    response.status.code, String(buffer: response.body), response.headers[.eTag] ?? "",
                                    response.headers[.lastModified] ?? "", response.headers[.date] ?? ""
                                ))
                        }
                        return seen
                    }
                }
                // Five new revisions while the clients run.
                for revision in 1...5 {
                    try await Task.sleep(for: .milliseconds(200))
                    try fixture.publish(
                        (0...revision).map { "com.example.served.r\($0)" }, at: Timestamp.now.adding(Int64(revision)))
                }
                try await Task.sleep(for: .milliseconds(200))
                published.set()
                var all: [(Int, String, String, String, String)] = []
                for try await part in group { all += part }
                return all
            }
            // The validators of every revision published, by ETag.
            var lastModifiedByTag: [String: Timestamp] = [:]
            for revision in 1...6 {
                let record = try fixture.publicTree.manifest(CatalogServerTests.app, revision: revision).variants[0].products
                lastModifiedByTag[record.entityTag] = record.lastModified
            }
            #expect(results.count >= 40)
            #expect(Set(results.map(\.2)).count > 1, "the reloads were not seen under load")
            let now = Timestamp.now
            for (status, body, etag, lastModified, date) in results {
                #expect(status == 200)
                #expect(etag == ContentHash.entityTag(sha256: ContentHash.sha256Hex(Array(body.utf8))), "ETag of another body")
                // The revision's Last-Modified, or Date when that is still ahead (this test
                // publishes with moments ahead of the clock): never later than Date.
                let served = HTTPDate.parse(lastModified, now: now)
                let sent = HTTPDate.parse(date, now: now)
                let recorded = lastModifiedByTag[etag]
                #expect(served != nil && sent != nil && recorded != nil)
                if let served, let sent, let recorded {
                    // Feed requests take the lean path, whose Date comes from the same clock.
                    #expect(served == min(recorded, sent), "Last-Modified of another revision")
                    #expect(served <= sent, "Last-Modified \(lastModified) later than Date \(date)")
                }
            }
        }
    }
}

extension Timestamp {
    fileprivate func adding(_ seconds: Int64) -> Timestamp {
        Timestamp(secondsSince1970: secondsSince1970 + seconds)
    }
}

/// Every row of the RFC 9110 table (``ConditionalExamples``) through real HTTP: a server whose
/// clock says the table's `now`, serving a feed last modified at the row's moment, with the
/// table's entity tag `"abc"` standing for the served one.
@Suite struct ConditionalTableOverHTTPTests {
    @Test(arguments: ConditionalExamples.cases)
    func row(_ row: ConditionalExamples.Case) async throws {
        let fixture = try CatalogServerTests.Fixture(ids: ["com.example.served.coins"], at: row.lastModified)
        defer { fixture.remove() }
        let manifest = try #require(try fixture.publicTree.currentManifest(CatalogServerTests.app))
        let record = manifest.variants[0].products
        var configuration = ServeConfiguration()
        configuration.clock = { ConditionalExamples.now }
        let application = buildApplication(
            publicDirectory: fixture.publicTree, port: 0, configuration: configuration, logger: Logger(label: "test"))
        func served(_ value: String) -> String {
            value.replacingOccurrences(of: ConditionalExamples.entityTag, with: record.entityTag)
        }
        var headers = HTTPFields()
        for value in row.ifNoneMatch { headers.append(HTTPField(name: .ifNoneMatch, value: served(value))) }
        for value in row.ifModifiedSince { headers.append(HTTPField(name: .ifModifiedSince, value: value)) }

        // Unsafe methods are not allowed on feeds (405), and a request that fails without its
        // conditions (here an unknown platform, 400) fails with them too: conditions are ignored.
        let uri = row.wouldSucceed ? CatalogServerTests.feedPath : CatalogServerTests.feedPath + "?platform=fireos"
        let method: HTTPRequest.Method = row.isGetOrHead ? .get : .post
        let expected: HTTPResponse.Status =
            !row.isGetOrHead
            ? .methodNotAllowed
            : !row.wouldSucceed
                ? .badRequest
                : row.expected == .notModified ? .notModified : .ok
        let requestHeaders = headers
        try await application.test(.live) { client in
            let response = try await client.execute(uri: uri, method: method, headers: requestHeaders)
            #expect(response.status == expected)
            if expected == .ok || expected == .notModified {
                #expect(response.headers[.eTag] == record.entityTag)
                #expect(response.headers[.date] == HTTPDate.format(ConditionalExamples.now))
                #expect(response.headers[.lastModified] == HTTPDate.format(min(row.lastModified, ConditionalExamples.now)))
            }
        }
    }
}

/// A flag one task raises and others read.
final class Flag: Sendable {
    private let state = Mutex(false)
    var isSet: Bool { state.withLock { $0 } }
    func set() { state.withLock { $0 = true } }
}
