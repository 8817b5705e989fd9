import AppStore
import CatalogKit
import Content
import Foundation
import HTTPTypes
import Hummingbird
import Ledger
import NIOCore
import NIOPosix
import Time

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

extension PurchaseEndpoints {
    /// What `POST …/content` may carry besides the purchase evidence: a customer's key, with a
    /// token in `Authorization`, as `GET …/customers/{id}` takes it.
    private struct ContentAsk: Decodable {
        var customer: String?
    }

    /// `POST /v1/apps/{app}/content` (docs/content.md, "Asking for content"): the customer is
    /// named by the evidence an app sends (verified and recorded as `POST …/purchases` does), or by
    /// one of its keys with a `backend` token; the answer lists the items of the current revision's
    /// content manifest the access rules grant them, with a signed URL per file.
    func content(
        _ request: Request, app: String, revision: Int?, networkKey: String?, now: Date, files: ContentFiles, tree: PublicTree,
        lifetime: TimeInterval
    ) async -> Response {
        guard request.method == .post else { return CatalogResponder.methodNotAllowed(request, allow: "POST") }
        guard let keyRing = files.keyRing else {
            return JSONError.response(.serviceUnavailable, "this server delivers no content: it was started without --content-keys")
        }
        let config: AppPurchases
        let evidence: PresentedEvidence
        let text: String
        let served: Int
        switch await presentedEvidence(request, app: app, revision: revision, networkKey: networkKey, limiter: byAddress) {
        case .failure(let refusal): return refusal.response
        case .success(let read): (config, evidence, text, served) = (read.settings, read.evidence, read.body, read.revision)
        }
        let record: CustomerRecord
        var at = now
        if let key = (try? JSONDecoder().decode(ContentAsk.self, from: Data(text.utf8)))?.customer {
            if let refusal = await backendToken(request, app: app) { return refusal.response }
            do {
                guard let found = try await store.customer(app: app, id: key) else {
                    return JSONError.response(.notFound, "no customer of '\(app)' has the key '\(key.prefix(128))'")
                }
                record = found
            } catch {
                return JSONError.response(.serviceUnavailable, "the purchase store does not answer")
            }
        } else {
            switch await verifyAndRecord(evidence, app: app, settings: config, revision: served, now: now, endpoint: "content") {
            case .failure(let refusal): return refusal.response
            case .success(let (found, verified)):
                record = found
                at = verified.answeredAt(now)
            }
        }
        let manifest: ContentManifest
        switch tree.servedContentManifest(app, revision: served) {
        case .failure(let error): return JSONError.response(.internalServerError, "\(error)")
        case .success(let found): manifest = found
        }
        let grants = CustomerContent.grants(
            record: record, catalog: config.catalog, groups: config.subscriptionGroups, manifest: manifest, at: at)
        let downloads = ContentDownload.list(grants: grants, manifest: manifest, keyRing: keyRing, now: now, lifetime: lifetime)
        return Self.ok(
            ServiceJSON.encode(ContentListAnswer(customer: record.id, at: at, revision: served, grants: grants, downloads: downloads)))
    }
}

/// `POST /v1/apps/{app}/content`'s answer: the customer, the instant and revision it was decided
/// at, and each item they may download with why, its version and its files with signed URLs.
struct ContentListAnswer: Codable, Sendable, Equatable {
    var customer: Int64
    var at: String
    var revision: Int
    var items: [Item]

    /// One item granted.
    struct Item: Codable, Sendable, Equatable {
        var item: String
        var version: Int
        /// `holds-product`, `published-during-period` or `current-at-first-period`.
        var rule: String
        /// The transaction that grants it.
        var transactionId: String
        /// The product held, for `holds-product`.
        var productId: String?
        /// The environment of the evidence that grants it (`Production`, `Sandbox`).
        var environment: String?
        var files: [ContentDownload.File]
    }

    init(customer: Int64, at: Date, revision: Int, grants: [ContentGrant], downloads: [ContentDownload]) {
        self.customer = customer
        self.at = CustomerAnswer.rfc3339(at)
        self.revision = revision
        let grantOf = Dictionary(grants.map { ($0.itemId, $0) }, uniquingKeysWith: { first, _ in first })
        items = downloads.compactMap { download in
            guard let grant = grantOf[download.item] else { return nil }
            let (rule, transaction, product) = Self.rule(grant.reason)
            return Item(
                item: download.item, version: download.version, rule: rule, transactionId: transaction, productId: product,
                environment: grant.environment?.rawValue, files: download.files)
        }
    }

    /// The rule's stable name, its transaction and, for a product held, the product.
    static func rule(_ reason: ContentGrantReason) -> (String, String, String?) {
        switch reason {
        case .holdsProduct(let product, let transaction): ("holds-product", transaction, product)
        case .publishedDuringPeriod(let transaction): ("published-during-period", transaction, nil)
        case .currentAtFirstPeriod(let transaction): ("current-at-first-period", transaction, nil)
        }
    }

}

extension CatalogResponder {
    /// `GET` or `HEAD` of a signed content URL that reached the application rather than the lean
    /// path (HTTP/2, HTTP/1.0, `Connection: close`, a request behind a passed-on one): the same
    /// decisions (``ContentFiles``, ``ContentResponse``), with the file read in chunks of 64 KiB as
    /// the client takes them (the response body's writer waits for the connection).
    func contentFile(_ request: Request) async -> Response {
        let now = configuration.clock()
        guard request.method == .get || request.method == .head else {
            return Self.response(
                ContentRefusal(status: 405, code: "method", message: "a content URL answers GET and HEAD").response(now: now))
        }
        guard let files = content else {
            return Self.response(
                ContentRefusal(status: 503, code: "not-configured", message: "this server delivers no content").response(now: now))
        }
        let path = request.uri.path
        let admission = files.admit(path: path, query: request.uri.query ?? "", now: now)
        guard case .serve(let token) = admission else {
            if case .refuse(let refusal) = admission { return Self.response(refusal.response(now: now)) }
            return JSONError.response(.internalServerError, "unreachable")
        }
        guard let opened = files.openBlob(token.digest) else {
            return Self.response(
                ContentRefusal(status: 404, code: "not-found", message: "no content has this digest on this server").response(now: now))
        }
        let contentRequest = ContentRequest(
            isHead: request.method == .head, path: path, query: request.uri.query ?? "", range: request.headers[.range],
            ifRange: request.headers[.ifRange])
        let answer = ContentResponse.file(token, length: opened.length, request: contentRequest, now: now)
        // The descriptor is not kept until the body is written: a connection that ends before
        // would never run the writer, and the file would stay open. The writer opens it again
        // (a blob never changes under its name; a length that differs ends the answer).
        close(opened.descriptor)
        let segments = answer.body
        guard !segments.isEmpty else { return Self.response(answer) }
        var response = Self.response(answer, body: nil)
        let length = opened.length
        response.body = ResponseBody(contentLength: Int(answer.contentLength)) { writer in
            guard let again = files.openBlob(token.digest) else { throw ContentFileChanged() }
            let file = NIOFileHandle(_deprecatedTakingOwnershipOfDescriptor: again.descriptor)
            defer { try? file.close() }
            guard again.length == length else { throw ContentFileChanged() }
            let fileIO = NonBlockingFileIO(threadPool: .singleton)
            for segment in segments {
                switch segment {
                case .bytes(let bytes):
                    try await writer.write(ByteBuffer(bytes: bytes))
                case .file(let offset, let count):
                    var sent: Int64 = 0
                    while sent < count {
                        let piece = Int(min(count - sent, 64 * 1024))
                        let chunk = try await fileIO.read(
                            fileHandle: file, fromOffset: offset + sent, byteCount: piece, allocator: ByteBufferAllocator())
                        guard chunk.readableBytes == piece else { throw ContentFileChanged() }
                        try await writer.write(chunk)
                        sent += Int64(piece)
                    }
                }
            }
            try await writer.finish(nil)
        }
        return response
    }

    /// A file changed under its digest (never, unless the store was damaged): the answer cannot be
    /// completed, and the connection is ended.
    private struct ContentFileChanged: Error {}

    /// `answer` as a Hummingbird response; its body from the bytes it holds unless `body` is nil
    /// (the caller streams the file).
    private static func response(_ answer: ContentResponse, body: [UInt8]? = []) -> Response {
        var fields = HTTPFields()
        for (name, value) in answer.headers where name != "Date" {
            if let field = HTTPField.Name(name) { fields.append(HTTPField(name: field, value: value)) }
        }
        var bytes: [UInt8] = []
        for case .bytes(let piece) in answer.body { bytes += piece }
        return Response(
            status: HTTPResponse.Status(code: answer.status), headers: fields,
            body: body == nil ? ResponseBody() : ResponseBody(byteBuffer: ByteBuffer(bytes: bytes)))
    }
}
