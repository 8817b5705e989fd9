import CatalogKit
import Foundation
import Hummingbird
import HummingbirdTesting
import Logging
import Testing

@testable import CatalogServer

/// What the lean path's request reader answers itself, and what it hands to the general pipeline.
@Suite struct LeanRequestParserTests {
    static let feed = "GET /v1/apps/com.example.app/products.json HTTP/1.1\r\nHost: localhost\r\n\r\n"

    func parse(_ text: String) -> LeanRequestParser.Outcome {
        Array(text.utf8).withUnsafeBytes { LeanRequestParser.parse($0) }
    }

    func feedRequest(_ text: String) -> FeedRequest? {
        guard case .feed(let request, let length) = parse(text), length == text.utf8.count else { return nil }
        return request
    }

    func isHandedOver(_ text: String) -> Bool {
        if case .handOver = parse(text) { return true }
        return false
    }

    func otherLength(_ text: String) -> Int? {
        if case .other(let length) = parse(text) { return length }
        return nil
    }

    @Test func readsAPlainFeedRequest() throws {
        let request = try #require(
            feedRequest(
                "HEAD /v1/apps/com.example.app/catalog.json?platform=ios&appVersion=2.3.1&platform=macos HTTP/1.1\r\n"
                    + "Host: localhost\r\nIf-None-Match: \"a\"\r\nIf-Modified-Since:  Sun, 06 Nov 1994 08:49:37 GMT \t\r\n"
                    + "Accept-Encoding: gzip\r\nConnection: keep-alive\r\nContent-Length: 0\r\n\r\n"))
        #expect(request.isHead)
        #expect(request.target.app == "com.example.app")
        #expect(request.target.kind == .catalog)
        #expect(request.target.platform == "ios", "the first of a repeated parameter counts, as on the general path")
        #expect(request.target.appVersion == "2.3.1")
        #expect(request.conditions.ifNoneMatch == ["\"a\""])
        #expect(request.conditions.ifModifiedSince == ["Sun, 06 Nov 1994 08:49:37 GMT"])
        #expect(request.acceptEncoding == ["gzip"])
    }

    /// A variant's own path is a feed request for the lean path, its query ignored as a static host ignores it.
    @Test func readsAVariantPath() throws {
        let request = try #require(
            feedRequest("GET /v1/apps/com.example.app/variants/ios/2.0/catalog.json?platform=macos HTTP/1.1\r\nHost: localhost\r\n\r\n"))
        #expect(request.target.app == "com.example.app")
        #expect(request.target.kind == .catalog)
        #expect(request.target.variant?.platform == "ios")
        #expect(request.target.variant?.band == "2.0")
        #expect(request.target.platform == nil)
        #expect(request.target.path == "/v1/apps/com.example.app/variants/ios/2.0/catalog.json")
        for other in ["variants/ios/catalog.json", "variants//2.0/catalog.json", "variants/ios/2.0/x/catalog.json", "variants.json"] {
            #expect(feedRequest("GET /v1/apps/com.example.app/\(other) HTTP/1.1\r\nHost: localhost\r\n\r\n") == nil, "\(other)")
        }
    }

    @Test(arguments: ["if-none-match", "IF-NONE-MATCH", "If-None-Match", "iF-nOnE-mAtCh"])
    func headerNamesAreCaseInsensitive(_ name: String) throws {
        let request = try #require(feedRequest("GET /v1/apps/com.example.app/products.json HTTP/1.1\r\n\(name): \"x\"\r\n\r\n"))
        #expect(request.conditions.ifNoneMatch == ["\"x\""])
    }

    @Test(arguments: ["Keep-Alive", "keep-alive ,KEEP-ALIVE", "\tkeep-alive\t"])
    func keepAliveIsReadInAnyCaseAndSpacing(_ value: String) {
        #expect(feedRequest("GET /v1/apps/com.example.app/products.json HTTP/1.1\r\nConnection: \(value)\r\n\r\n") != nil)
    }

    @Test func repeatedConditionalHeadersAreAllKept() throws {
        let request = try #require(
            feedRequest(
                "GET /v1/apps/com.example.app/products.json HTTP/1.1\r\nif-none-match: \"a\"\r\nIf-None-Match: \"b\", \"c\"\r\n"
                    + "If-Modified-Since: Sun, 06 Nov 1994 08:49:37 GMT\r\nif-modified-since: Sun, 06 Nov 1994 08:49:38 GMT\r\n\r\n"))
        #expect(request.conditions.ifNoneMatch == ["\"a\"", "\"b\", \"c\""])
        #expect(request.conditions.ifModifiedSince.count == 2, "both lines reach the evaluation, which ignores two dates")
    }

    @Test func everyPrefixOfARequestWaitsForMore() {
        for end in 0..<Self.feed.utf8.count {
            let prefix = String(decoding: Array(Self.feed.utf8)[..<end], as: UTF8.self)
            guard case .needMore = parse(prefix) else {
                Issue.record("\(end) bytes were not taken as the start of a request")
                continue
            }
        }
    }

    @Test func pipelinedRequestsAreReadOneAtATime() throws {
        guard case .feed(_, let length) = parse(Self.feed + "GET /healthz HTTP/1.1\r\n\r\n") else {
            Issue.record("the first request was not read")
            return
        }
        #expect(length == Self.feed.utf8.count)
    }

    @Test(arguments: [
        "GET  /v1/apps/com.example.app/products.json HTTP/1.1\r\n\r\n",
        "GET /v1/apps/com.example.app/products.json  HTTP/1.1\r\n\r\n",
        "GET /v1/apps/com.example.app/products.json HTTP/1.2\r\n\r\n",
        "GET /v1/apps/com.example.app/products.json http/1.1\r\n\r\n",
        "GET /v1/apps/com.example.app/products.json\r\n\r\n",
        "get /v1/apps/com.example.app/products.json HTTP/1.1\r\n\r\n",
        "GET /v1/apps/com.example.app/products.json HTTP/1.1\n\n",
        "GET /v1/apps/com.example.app/products.json HTTP/1.1\r\nHost: x\n\r\n",
        "GET /v1/apps/com.example.app/products.json\t HTTP/1.1\r\n\r\n",
        "GET /v1/apps/caf\u{E9}/products.json HTTP/1.1\r\n\r\n",
        "POST /v1/apps/com.example.app/invalid-identifiers HTTP/1.1\r\nContent-Length: 2\r\n\r\n[]",
        "OPTIONS * HTTP/1.1\r\n\r\n",
        "\r\nGET /v1/apps/com.example.app/products.json HTTP/1.1\r\n\r\n",
    ])
    func malformedOrUnusualRequestLinesAreHandedOver(_ request: String) {
        #expect(isHandedOver(request))
    }

    @Test(arguments: [
        "X-Folded: a\r\n b",
        "Host : localhost",
        ": empty name",
        "No-Colon",
        "X-Bare-CR: a\rb",
        "X-Null: a\u{0}b",
        "X-Obs-Text: caf\u{E9}",
        "Content-Length: 5",
        "Content-Length: 0, 0",
        "Transfer-Encoding: chunked",
        "Expect: 100-continue",
        "Upgrade: websocket",
    ])
    func fieldsOnlyTheGeneralPathReadsHandTheConnectionOver(_ field: String) {
        #expect(isHandedOver("GET /v1/apps/com.example.app/products.json HTTP/1.1\r\nHost: localhost\r\n\(field)\r\n\r\n"))
    }

    @Test(arguments: [
        "GET /healthz HTTP/1.1\r\n\r\n",
        "GET /v1/apps HTTP/1.1\r\n\r\n",
        "GET /v1/apps/com.example.app/products.json HTTP/1.0\r\n\r\n",
        "GET /v1/apps/com.example.app/products.json HTTP/1.1\r\nConnection: close\r\n\r\n",
        "GET /v1/apps/com.example.app/products.json HTTP/1.1\r\nConnection: keep-alive, Upgrade\r\n\r\n",
        "HEAD /v1/apps/com.example.app/other.json HTTP/1.1\r\n\r\n",
        "GET /v1/apps/com.example.app/revisions/1/products.json HTTP/1.1\r\n\r\n",
        "GET /v1/apps/com%2Eexample.app/products.json HTTP/1.1\r\n\r\n",
        "GET /v1/apps/com.example.app/products.json?platform HTTP/1.1\r\n\r\n",
        "GET /v1/apps/com.example.app/products.json?appVersion=1+2 HTTP/1.1\r\n\r\n",
    ])
    func otherWellFormedRequestsAreHandedOverOneByOne(_ request: String) {
        #expect(otherLength(request + "GET /healthz HTTP/1.1\r\n\r\n") == request.utf8.count)
    }

    @Test func longHeaderBlocksAreHandedOver() {
        let long = "X-Big: " + String(repeating: "a", count: LeanRequestParser.maxHeaderBlock) + "\r\n"
        #expect(isHandedOver("GET /v1/apps/com.example.app/products.json HTTP/1.1\r\n" + long + "\r\n"))
        #expect(isHandedOver("GET /v1/apps/com.example.app/products.json HTTP/1.1\r\n" + long), "even before it ends")
        let many = String(repeating: "A: b\r\n", count: LeanRequestParser.maxFieldCount + 1)
        #expect(isHandedOver("GET /v1/apps/com.example.app/products.json HTTP/1.1\r\n" + many + "\r\n"))
    }
}
