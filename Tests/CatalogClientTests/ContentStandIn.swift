import CatalogClient
import Content
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Synchronization
import Testing

/// A stand-in for the content endpoints as docs/content.md specifies them, on loopback: `POST
/// /v1/apps/{app}/content` answers `{"items":[…]}` made by the core's `ContentDownload.list`, with
/// URLs signed by a real `ContentKeyRing`; `GET /v1/content/{sha256}?exp&kid&sig` verifies the URL
/// first (403 with the refusal's code), then answers as `RangeResponsePlan` plans it, with `ETag`,
/// `Repr-Digest` and `Accept-Ranges`. Its misbehaviours are switched on per test.
final class ContentStandIn: Sendable {
    static let app = "com.example.client"

    /// One `GET` as the stand-in saw it.
    struct Fetch: Sendable, Hashable {
        var digest: String
        var range: String?
        var ifRange: String?
        var status: Int
    }

    struct State: Sendable {
        /// The manifest's items, and the bytes served for each digest.
        var items: [ContentManifest.Item] = []
        var blobs: [ContentDigest: [UInt8]] = [:]
        var fetches: [Fetch] = []
        var lists = 0
        var listBodies: [Data] = []
        /// The next answer to a 200 or 206 stops after this many bytes, and the connection is cut.
        var cutAfter: Int?
        /// The next answer to a 200 or 206 holds after this many bytes until ``release()``.
        var holdAfter: Int?
        var released = false
        /// The next list is signed by a key the server does not have: its URLs are refused.
        var signNextListWithUnknownKey = false
        /// The next list's URLs expired a minute ago (a list kept too long).
        var expireNextList = false
        /// A list answered as it is, instead of the manifest's.
        var rawList: String?
    }

    let state = Mutex(State())
    let keyRing: ContentKeyRing
    let strangerRing: ContentKeyRing

    init() throws {
        keyRing = try ContentKeyRing(keys: [try ContentSigningKey.generate(id: "k1")], current: "k1")
        strangerRing = try ContentKeyRing(keys: [try ContentSigningKey.generate(id: "stranger")], current: "stranger")
    }

    /// Publishes `files` (path and bytes) as `item` at `version`, replacing any earlier version.
    func publish(_ item: String, version: Int, files: [(String, [UInt8])]) {
        state.withLock { state in
            var entries: [ContentManifest.File] = []
            for (path, bytes) in files {
                let digest = ContentDigest.of(bytes)
                state.blobs[digest] = bytes
                entries.append(ContentManifest.File(path: path, size: Int64(bytes.count), sha256: digest))
            }
            state.items.removeAll { $0.id == item }
            state.items.append(ContentManifest.Item(id: item, version: version, product: "\(item).product", files: entries))
        }
    }

    /// Lists `item` with one file of `size` bytes and `digest` that someone else serves (nginx).
    func list(_ item: String, version: Int, path: String, size: Int64, digest: ContentDigest) {
        state.withLock { state in
            state.items.removeAll { $0.id == item }
            state.items.append(
                ContentManifest.Item(
                    id: item, version: version, product: "\(item).product",
                    files: [ContentManifest.File(path: path, size: size, sha256: digest)]))
        }
    }

    func release() { state.withLock { $0.released = true } }
    var fetches: [Fetch] { state.withLock { $0.fetches } }
    var lists: Int { state.withLock { $0.lists } }

    /// The answer as `catalog serve` gives it (docs/content.md, "Asking for content"): the client
    /// reads each item's id, version and files, and must ignore the rest.
    private struct Answer: Encodable {
        var at = "2026-01-01T00:00:00.000Z"
        var customer = 1
        var revision = 1
        var items: [Item]
    }

    private struct Item: Encodable {
        var item: String
        var version: Int
        var rule = "holds-product"
        var transactionId = "1"
        var productId: String?
        var files: [ContentDownload.File]
    }

    private func list() throws -> Response {
        let (items, unknownKey, expired, raw) = state.withLock { state in
            state.lists += 1
            defer {
                state.signNextListWithUnknownKey = false
                state.expireNextList = false
            }
            return (state.items, state.signNextListWithUnknownKey, state.expireNextList, state.rawList)
        }
        if let raw {
            return Response(status: .ok, headers: [.contentType: "application/json"], body: .init(byteBuffer: .init(string: raw)))
        }
        let manifest = try ContentManifest(items: items)
        let grants = items.map { ContentGrant(itemId: $0.id, reason: .holdsProduct(productId: $0.product ?? "", transactionId: "1")) }
        var downloads = ContentDownload.list(
            grants: grants, manifest: manifest, keyRing: unknownKey ? strangerRing : keyRing, now: Date(), lifetime: 3600)
        if expired {
            for item in downloads.indices {
                for file in downloads[item].files.indices {
                    let token = keyRing.sign(digest: downloads[item].files[file].sha256, expires: Date(timeIntervalSinceNow: -60))
                    downloads[item].files[file].url = token.pathAndQuery
                    downloads[item].files[file].expires = token.expires
                }
            }
        }
        let answer = Answer(
            items: downloads.map { Item(item: $0.item, version: $0.version, productId: "\($0.item).product", files: $0.files) })
        let body = try JSONEncoder().encode(answer)
        return Response(status: .ok, headers: [.contentType: "application/json"], body: .init(byteBuffer: .init(bytes: body)))
    }

    private func serve(_ request: Request) -> Response {
        let range = request.headers[.range]
        let ifRange = request.headers[values: HTTPField.Name("If-Range")!].first
        let token: ContentURLToken
        switch keyRing.verify(path: request.uri.path, query: request.uri.query ?? "", now: Date()) {
        case .failure(let refusal):
            state.withLock { $0.fetches.append(Fetch(digest: "", range: range, ifRange: ifRange, status: 403)) }
            let body = #"{"error":{"code":"\#(refusal.code)","message":"refused"}}"#
            return Response(status: .forbidden, headers: [.contentType: "application/json"], body: .init(byteBuffer: .init(string: body)))
        case .success(let verified): token = verified
        }
        let (bytes, cutAfter, holdAfter) = state.withLock { state in
            (state.blobs[token.digest], state.cutAfter, state.holdAfter)
        }
        guard let bytes else { return Response(status: .notFound) }
        let length = Int64(bytes.count)
        var headers: HTTPFields = [
            .acceptRanges: "bytes", .eTag: token.digest.entityTag, HTTPField.Name("Repr-Digest")!: token.digest.reprDigestFieldValue,
            .contentType: "application/octet-stream",
        ]
        let plan = RangeResponsePlan.plan(range: range, ifRange: ifRange, length: length, entityTag: token.digest.entityTag)
        if let contentRange = plan.contentRange(length: length) { headers[.contentRange] = contentRange }
        state.withLock { $0.fetches.append(Fetch(digest: token.digest.hex, range: range, ifRange: ifRange, status: plan.status)) }
        let slice: ArraySlice<UInt8>
        switch plan {
        case .full, .multipart: slice = bytes[...]  // the client never asks for several ranges
        case .single(let range): slice = bytes[Int(range.first)...Int(range.last)]
        case .unsatisfiable: return Response(status: .rangeNotSatisfiable, headers: headers)
        }
        // Each misbehaviour applies to one answer.
        state.withLock { state in
            if cutAfter != nil { state.cutAfter = nil } else if holdAfter != nil { state.holdAfter = nil }
        }
        let status: HTTPResponse.Status = plan.status == 206 ? .partialContent : .ok
        return Response(
            status: status, headers: headers,
            body: ResponseBody(contentLength: slice.count) { [self] writer in
                var sent = 0
                for chunk in stride(from: slice.startIndex, to: slice.endIndex, by: 16 * 1024) {
                    if let cutAfter, sent >= cutAfter { throw CancellationError() }
                    if let holdAfter, sent >= holdAfter {
                        // Bounded: a test that forgets to release still ends.
                        for _ in 0..<400 where !self.state.withLock({ $0.released }) { try await Task.sleep(for: .milliseconds(50)) }
                    }
                    let end = min(chunk + 16 * 1024, slice.endIndex)
                    try await writer.write(ByteBuffer(bytes: slice[chunk..<end]))
                    sent += end - chunk
                }
                try await writer.finish(nil)
            })
    }

    /// Runs the stand-in during `body`.
    func run(_ body: @Sendable (URL) async throws -> Void) async throws {
        let router = Router()
        router.post("/v1/apps/\(Self.app)/content") { request, _ in
            let data = try await request.body.collect(upTo: 1 << 20)
            self.state.withLock { $0.listBodies.append(Data(buffer: data)) }
            return try self.list()
        }
        router.get("/v1/content/:digest") { request, _ in self.serve(request) }
        try await Application(router: router, configuration: .init(address: .hostname("127.0.0.1", port: 0))).test(.live) { client in
            let port = try #require(client.port)
            try await body(try #require(URL(string: "http://127.0.0.1:\(port)")))
        }
    }
}
