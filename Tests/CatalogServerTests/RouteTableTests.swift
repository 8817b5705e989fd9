import CatalogKit
import HTTPTypes
import Testing

@testable import CatalogServer

/// The feature tables against what the server answered before them (issue 36 item 6): each
/// route's `route` label, its listener and its methods, written out here once more on purpose,
/// since dashboards and alerts depend on the labels and a typo in a table would otherwise only
/// show on a dashboard. Routes added since need not join: `OpenAPITests` holds the tables to the
/// document, and a new route is one entry in its table.
@Suite struct RouteTableTests {
    /// Every template the server had before the tables, with the label
    /// `catalog_http_requests_total` counts it under, its listener when `--admin-port` splits
    /// them, and its methods.
    static let expected: [String: (label: String, listener: RouteListener, methods: [HTTPRequest.Method])] = [
        "/healthz": ("healthz", .both, [.get, .head]),
        "/readyz": ("readyz", .both, [.get, .head]),
        "/openapi.yaml": ("openapi", .both, [.get, .head]),
        "/metrics": ("metrics", .admin, [.get, .head]),
        "/v1/apps": ("apps", .public, [.get, .head]),
        "/v1/apps/{app}/products.json": ("products", .public, [.get, .head]),
        "/v1/apps/{app}/catalog.json": ("catalog", .public, [.get, .head]),
        "/v1/apps/{app}/variants.json": ("variants", .public, [.get, .head]),
        "/v1/apps/{app}/variants/{platform}/{band}/products.json": ("products", .public, [.get, .head]),
        "/v1/apps/{app}/variants/{platform}/{band}/catalog.json": ("catalog", .public, [.get, .head]),
        "/v1/apps/{app}/revisions": ("revisions", .public, [.get, .head]),
        "/v1/apps/{app}/revisions/{revision}/products.json": ("revision_products", .public, [.get, .head]),
        "/v1/apps/{app}/revisions/{revision}/catalog.json": ("revision_catalog", .public, [.get, .head]),
        "/v1/apps/{app}/invalid-identifiers": ("reports", .public, [.post]),
        "/v1/apps/{app}/notifications/app-store": ("notifications", .public, [.post]),
        "/v1/apps/{app}/purchases": ("purchases", .public, [.post]),
        "/v1/apps/{app}/customers/{id}": ("customers", .public, [.get, .head]),
        "/v1/apps/{app}/customers/lookup": ("customer_lookup", .public, [.post]),
        "/v1/apps/{app}/content": ("content_list", .public, [.post]),
        "/v1/content/{sha256}": ("content", .public, [.get, .head]),
        "/v1/admin/apps": ("admin", .admin, [.get]),
        "/v1/admin/apps/{app}": ("admin", .admin, [.get]),
        "/v1/admin/apps/{app}/products": ("admin", .admin, [.post]),
        "/v1/admin/apps/{app}/products/{id}": ("admin", .admin, [.put]),
        "/v1/admin/apps/{app}/products/{id}/retire": ("admin", .admin, [.post]),
        "/v1/admin/apps/{app}/publish": ("admin", .admin, [.post]),
        "/v1/admin/apps/{app}/reports": ("admin", .admin, [.get]),
        "/v1/admin/apps/{app}/reports/daily": ("admin", .admin, [.get]),
        "/v1/admin/apps/{app}/feedback/{id}/release": ("admin", .admin, [.post]),
        "/v1/admin/apps/{app}/feedback/{id}/quarantine": ("admin", .admin, [.post]),
        "/v1/admin/apps/{app}/revisions": ("admin", .admin, [.get]),
        "/v1/admin/apps/{app}/diff": ("admin", .admin, [.get]),
        "/v1/admin/apps/{app}/revisions/{revision}/rollback": ("admin", .admin, [.post]),
        "/v1/admin/apps/{app}/customers/{id}": ("admin", .admin, [.get]),
        "/v1/admin/apps/{app}/customers/{id}/content": ("admin", .admin, [.get]),
        "/v1/admin/audit": ("admin", .admin, [.get]),
        "/editor": ("editor", .admin, [.get, .head]),
        "/editor/": ("editor", .admin, [.get, .head]),
        "/editor/editor.css": ("editor", .admin, [.get, .head]),
        "/editor/editor.js": ("editor", .admin, [.get, .head]),
    ]

    @Test func everyRouteKeepsItsLabelListenerAndMethods() {
        for (template, expected) in Self.expected.sorted(by: { $0.key < $1.key }) {
            let route = CatalogResponder.routes.route(template: template)
            #expect(route?.metricsName.rawValue == expected.label, "\(template)")
            #expect(route?.listener == expected.listener, "\(template)")
            #expect(route?.methods == expected.methods, "\(template)")
        }
    }

    /// The lean paths count what they answer under the labels of the routes they stand in for.
    @Test func theLeanPathsCountUnderTheTablesLabels() {
        #expect(MetricsRoute(FeedKind.products).rawValue == "products")
        #expect(MetricsRoute(FeedKind.catalog).rawValue == "catalog")
        #expect(MetricsRoute.reports.rawValue == "reports")
        #expect(MetricsRoute.notifications.rawValue == "notifications")
        #expect(MetricsRoute.content.rawValue == "content")
        #expect(MetricsRoute.unknown.rawValue == "unknown")
    }

    /// Each template's sample path finds its own route, not another, and paths the old matcher
    /// refused still match nothing: parameters are checked before anything is looked up.
    @Test func pathsFindTheirRouteAndNoOther() {
        for route in CatalogResponder.routes.routes {
            let matched = CatalogResponder.routes.match(OpenAPITests.sample(route.template))
            #expect(matched?.route.template == route.template, "\(route.template)")
        }
        let app = CatalogServerTests.app
        #expect(CatalogResponder.routes.match("/v1/apps/\(app)/customers/lookup")?.route.template == "/v1/apps/{app}/customers/lookup")
        for refused in [
            "/", "/healthz/", "/v1/apps/", "/v1/apps/../products.json", "/v1/apps/a_b/products.json",
            "/v1/apps/\(app)/revisions/0/products.json",
            "/v1/apps/\(app)/revisions/-1/products.json", "/v1/apps/\(app)/revisions/1x/products.json",
            "/v1/apps/\(app)/variants/IOS/any/products.json", "/v1/apps/\(app)/variants/ios/x/products.json",
            "/v1/apps/\(app)/variants/abcdefghijklmnopq/any/products.json", "/v1/apps/\(app)/customers/a%20b",
            "/v1/apps/\(app)/customers/" + String(repeating: "a", count: 129), "/v1/apps/a_b/customers/lookup",
            "/v1/admin/apps/\(app)/products/" + String(repeating: "a", count: 101), "/v1/admin/apps/\(app)/revisions/0/rollback",
            "/v1/admin", "/editor/index.html", "/editor//", "/v1/content/abc/def",
        ] {
            #expect(CatalogResponder.routes.match(refused) == nil, "\(refused)")
        }
    }
}
