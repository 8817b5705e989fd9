import CatalogKit
import CatalogServer
import Foundation
import HTTPTypes
import HummingbirdTesting
import NIOCore
import Testing

/// Android apps' reports (docs/reports.md, "Unfetched products on Android"): Play's ids become the
/// catalog's products, and only what Play says does not exist counts as invalid.
@Suite struct AndroidReportTests {
    static let products = """
        <dict><key>id</key><string>com.example.app.android.pro.monthly</string><key>type</key><string>auto-renewable</string>
        <key>subscription</key><dict><key>group</key><string>pro</string><key>period</key><string>P1M</string></dict>
        <key>play</key><dict><key>productId</key><string>pro</string><key>basePlan</key><string>monthly</string></dict></dict>
        <dict><key>id</key><string>com.example.app.android.pro.yearly</string><key>type</key><string>auto-renewable</string>
        <key>subscription</key><dict><key>group</key><string>pro</string><key>period</key><string>P1Y</string></dict>
        <key>play</key><dict><key>productId</key><string>pro</string><key>basePlan</key><string>yearly</string></dict></dict>
        <dict><key>id</key><string>com.example.app.android.gems</string><key>type</key><string>consumable</string>
        <key>play</key><dict><key>productId</key><string>gems</string></dict></dict>
        """
    static let path = "/v1/apps/\(PurchaseEndpointTests.app)/invalid-identifiers"

    @Test func unfetchedProductsAreCountedAsTheCatalogsProducts() async throws {
        try await PurchaseEndpointTests.withServer(products: Self.products) { client, server in
            let body = """
                {"platform":"android","environment":"production","installId":"android-1",
                 "requestedProductIdentifiers":["pro","gems","ghost"],
                 "unfetchedProducts":[{"productId":"pro","productType":"subs","statusCode":3},
                                      {"productId":"gems","productType":"inapp","statusCode":4},
                                      {"productId":"ghost","statusCode":3},{"productId":"gems","statusCode":0}]}
                """
            let response = try await client.execute(
                uri: Self.path, method: .post, headers: [.contentType: "application/json"], body: ByteBuffer(string: body))
            #expect(response.status == .accepted)
            // `pro` and `ghost` were invalid at Play; `pro` is two products of the catalog, `ghost` none.
            #expect(String(buffer: response.body) == #"{"accepted":2}"#)
            let aggregates = try await server.store.aggregate(AggregateQuery(app: PurchaseEndpointTests.app))
            #expect(aggregates.map(\.identifier).sorted() == ["com.example.app.android.pro.monthly", "com.example.app.android.pro.yearly"])
            #expect(aggregates.allSatisfy { $0.platform == .android && $0.requestedReports == 1 })
        }
    }

    @Test func unfetchedProductsComeFromAndroidOnly() async throws {
        try await PurchaseEndpointTests.withServer(products: Self.products) { client, server in
            let body = #"{"platform":"ios","unfetchedProducts":[{"productId":"pro","statusCode":3}]}"#
            let response = try await client.execute(
                uri: Self.path, method: .post, headers: [.contentType: "application/json"], body: ByteBuffer(string: body))
            #expect(response.status == .badRequest)
            #expect(String(buffer: response.body).contains("the platform must be android"))
            #expect(try await server.store.aggregate(AggregateQuery()).isEmpty)
        }
    }
}
