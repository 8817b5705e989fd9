import CatalogKit
import HTTPSemantics
import HTTPTypes
import Hummingbird
import NIOCore
import Time

extension CatalogResponder {
    /// The feeds and what finds them: the apps, each app's current feeds, its variants and their
    /// feeds, its revisions and their snapshots.
    ///
    /// The lean path (`LeanPath/`) answers most requests for current feeds before Hummingbird
    /// sees them, with a parser of its own, and counts them under the labels these routes give
    /// (``MetricsRoute/init(_:)``); HTTP/2, HTTP/1.0 and requests behind a passed-on one come here.
    static let feedRoutes = RouteTable(
        "feeds", listener: .public,
        parameters: ["app": .appName, "platform": .platformKey, "band": .bandKey, "revision": .revision],
        [
            RouteSpec("/v1/apps", .get, .head, metrics: "apps") { responder, _ in responder.appsIndex() },
            productsFeedRoute,
            catalogFeedRoute,
            RouteSpec("/v1/apps/{app}/variants.json", .get, .head, metrics: "variants") { $0.variantIndex($1) },
            RouteSpec("/v1/apps/{app}/variants/{platform}/{band}/products.json", .get, .head, metrics: "products") {
                $0.variantFeed($1, kind: .products)
            },
            RouteSpec("/v1/apps/{app}/variants/{platform}/{band}/catalog.json", .get, .head, metrics: "catalog") {
                $0.variantFeed($1, kind: .catalog)
            },
            RouteSpec("/v1/apps/{app}/revisions", .get, .head, metrics: "revisions") { await $0.revisions($1) },
            RouteSpec("/v1/apps/{app}/revisions/{revision}/products.json", .get, .head, metrics: "revision_products") {
                await $0.snapshot($1, kind: .products)
            },
            RouteSpec("/v1/apps/{app}/revisions/{revision}/catalog.json", .get, .head, metrics: "revision_catalog") {
                await $0.snapshot($1, kind: .catalog)
            },
        ])

    /// An app's current feeds, named apart: the lean path counts what it answers under their labels.
    static let productsFeedRoute = RouteSpec("/v1/apps/{app}/products.json", .get, .head, metrics: "products") {
        $0.feed($1, kind: .products)
    }
    static let catalogFeedRoute = RouteSpec("/v1/apps/{app}/catalog.json", .get, .head, metrics: "catalog") {
        $0.feed($1, kind: .catalog)
    }

    /// `GET /v1/apps`: the published apps and their revisions.
    func appsIndex() -> Response {
        let apps = store.index.apps.sorted(by: { $0.key < $1.key }).map { app, published in
            AppList.App(app: app, revision: published.manifest.revision, publishedAt: published.manifest.publishedAt.iso8601)
        }
        return JSONResponse.ok(ServiceJSON.encode(AppList(apps: apps)))
    }

    /// An app's current feed of `kind`, for the platform and app version the query names.
    func feed(_ call: RouteCall, kind: FeedKind) -> Response {
        let now = configuration.clock()
        let query = call.request.uri.queryParameters
        let lookup = store.index.feed(
            app: call.app, kind: kind, platform: query.get("platform"), appVersion: query.get("appVersion"), at: now)
        return respond(with: lookup, to: call.request, now: now)
    }

    /// `…/variants/{platform}/{band}/<kind>`: one variant at a path of its own.
    func variantFeed(_ call: RouteCall, kind: FeedKind) -> Response {
        let now = configuration.clock()
        let lookup = store.index.feed(
            app: call.app, kind: kind, platformKey: call.parameters["platform"], bandKey: call.parameters["band"], at: now)
        return respond(with: lookup, to: call.request, now: now)
    }

    private func respond(with lookup: Result<ServedFeed, FeedIndex.LookupError>, to request: Request, now: Timestamp) -> Response {
        switch lookup {
        case .failure(let error):
            return JSONError.response(HTTPResponse.Status(code: error.status), error.description)
        case .success(let feed):
            return respond(with: feed, bodies: store.bodies(of: feed), to: request, now: now, cacheControl: configuration.cacheControl)
        }
    }

    /// `variants.json`, with its entity tag; it has no Last-Modified of its own (its bytes change
    /// only when the app's platforms or bands do), so If-None-Match alone revalidates it.
    func variantIndex(_ call: RouteCall) -> Response {
        guard let published = store.index.apps[call.app] else { return JSONError.response(.notFound, "no published app '\(call.app)'") }
        let index = published.variantIndex
        let headers: HTTPFields = [.contentType: "application/json", .cacheControl: configuration.cacheControl, .eTag: index.entityTag]
        let matches = call.request.headers[values: .ifNoneMatch].flatMap { $0.split(separator: ",") }.contains {
            let tag = $0.trimmingCharacters(in: .whitespaces)
            return tag == "*" || tag == index.entityTag || tag == "W/" + index.entityTag
        }
        if matches { return Response(status: .notModified, headers: headers) }
        let body = call.request.method == .head ? ResponseBody() : ResponseBody(byteBuffer: ByteBuffer(bytes: index.bytes))
        return Response(status: .ok, headers: headers, body: body)
    }

    /// `GET /v1/apps/{app}/revisions`: the revisions kept.
    func revisions(_ call: RouteCall) async -> Response {
        guard let json = await store.revisionList(call.app) else { return JSONError.response(.notFound, "no published app '\(call.app)'") }
        return JSONResponse.ok(String(decoding: json, as: UTF8.self))
    }

    /// A revision's feed of `kind`, which never changes.
    func snapshot(_ call: RouteCall, kind: FeedKind) async -> Response {
        let now = configuration.clock()
        let revision = call.parameters.revision
        guard let snapshot = await store.snapshot(call.app, revision: revision, kind: kind) else {
            return JSONError.response(.notFound, "no revision \(revision) of app '\(call.app)'")
        }
        return respond(
            with: snapshot.feed, bodies: snapshot.bodies, to: call.request, now: now, cacheControl: configuration.immutableCacheControl)
    }

    /// Hummingbird replaces the Date header with a value it refreshes once a second, up to a
    /// second behind the clock; Last-Modified must never be later than it.
    static let dateLag: Int64 = 1

    private func respond(
        with feed: ServedFeed, bodies: FeedBodies, to request: Request, now: Timestamp, cacheControl: String
    ) -> Response {
        let decided = FeedResponse.decide(
            feed: feed,
            conditions: ConditionalRequest(
                ifNoneMatch: request.headers[values: .ifNoneMatch], ifModifiedSince: request.headers[values: .ifModifiedSince]),
            acceptEncoding: request.headers[values: .acceptEncoding], isHead: request.method == .head, now: now,
            cacheControl: cacheControl, dateLag: Self.dateLag)
        var headers = HTTPFields()
        for (name, value) in decided.headers {
            if let field = HTTPField.Name(name) { headers[field] = value }
        }
        // The feed's own buffer, shared with every other response: no copy per request.
        let body = decided.body == nil ? ResponseBody() : ResponseBody(byteBuffer: bodies.body(gzip: decided.choice.gzip))
        return Response(status: HTTPResponse.Status(code: decided.status), headers: headers, body: body)
    }
}

extension MetricsRoute {
    /// The label of an app's current feed of `kind`, as the feeds table names it: the lean path
    /// counts the feeds it answers under the same.
    init(_ kind: FeedKind) {
        self = kind == .products ? Self.productsFeed : Self.catalogFeed
    }

    private static let productsFeed = CatalogResponder.productsFeedRoute.metricsName
    private static let catalogFeed = CatalogResponder.catalogFeedRoute.metricsName
}
