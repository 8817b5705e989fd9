import Hummingbird

extension CatalogResponder {
    /// Purchased content (docs/content.md): what a customer may download, and the files, at
    /// URLs signed for them.
    static let contentRoutes = RouteTable(
        "content", listener: .public, parameters: ["app": .appName, "sha256": .verifiedByHandler],
        [
            RouteSpec("/v1/apps/{app}/content", .post, metrics: "content_list", availability: .purchasesAndContent) {
                await $0.contentList($1)
            },
            contentFileRoute,
        ])

    /// Named apart: the lean path answers most content URLs, counted under its label. A wrong
    /// method is refused as the lean path refuses it, by ``contentFile(_:)``.
    static let contentFileRoute = RouteSpec("/v1/content/{sha256}", .get, .head, metrics: "content", methodRefusal: .byHandler) {
        await $0.contentFile($1.request)
    }

    /// `POST /v1/apps/{app}/content`: what a customer may download, with a signed URL per file.
    func contentList(_ call: RouteCall) async -> Response {
        await withPurchases(call) { purchases, revision, now in
            guard let content else { return Self.noContent }
            return await purchases.content(
                call.request, app: call.app, revision: revision, networkKey: networkKey(call), now: now, files: content, tree: store.tree,
                lifetime: configuration.content.urlLifetime)
        }
    }

    static var noContent: Response {
        JSONError.response(.serviceUnavailable, "this server delivers no content: it was started without --content-keys")
    }
}

extension RouteAvailability {
    /// A store that keeps purchases and content files with their keys.
    static let purchasesAndContent = RouteAvailability { responder in
        responder.purchases == nil ? CatalogResponder.noPurchases : responder.content == nil ? CatalogResponder.noContent : nil
    }
}

extension MetricsRoute {
    /// A content file's `GET`, on either path.
    static let content = CatalogResponder.contentFileRoute.metricsName
}
