import CatalogKit
import CatalogServer
import CatalogTestSupport
import Foundation
import HTTPTypes
import HummingbirdTesting
import NIOCore
import Testing
import Time

/// `/editor/`: the dashboard's files as a browser must get them, and the per-day report counts its
/// chart is drawn from. What the page does with them is the browser test's (catalogTests).
@Suite struct EditorDashboardTests {
    @Test(arguments: [
        ("/editor/", "text/html; charset=utf-8", "<script src=\"editor.js\" defer></script>"),
        ("/editor/editor.css", "text/css; charset=utf-8", ":focus-visible"),
        ("/editor/editor.js", "text/javascript; charset=utf-8", "/v1/admin/apps"),
    ])
    func servesEachFileWithItsTypeAndAStrictPolicy(path: String, type: String, excerpt: String) async throws {
        try await AdminAPITests.withServer { client, _ in
            let response = try await client.execute(uri: path, method: .get)
            #expect(response.status == .ok)
            #expect(response.headers[.contentType] == type)
            #expect(response.headers[.cacheControl] == "no-cache")
            #expect(response.headers[.xContentTypeOptions] == "nosniff")
            let policy = try #require(response.headers[.contentSecurityPolicy])
            #expect(policy.contains("script-src 'self'"))
            #expect(!policy.contains("unsafe-inline"))
            #expect(policy.contains("frame-ancestors 'none'"))
            #expect(String(buffer: response.body).contains(excerpt))

            let etag = try #require(response.headers[.eTag])
            let again = try await client.execute(uri: path, method: .get, headers: [.ifNoneMatch: etag])
            #expect(again.status == .notModified)
            #expect(again.body.readableBytes == 0)
        }
    }

    /// No inline script or style anywhere in the page: the policy would block it, and the page
    /// would break only in a browser.
    @Test func thePageHasNoInlineScriptOrStyle() async throws {
        try await AdminAPITests.withServer { client, _ in
            let page = String(buffer: try await client.execute(uri: "/editor/", method: .get).body)
            #expect(!page.contains("<script>"))
            #expect(!page.contains("<style"))
            #expect(!page.contains(" style="))
            #expect(!page.contains(" onclick="))
        }
    }

    @Test(arguments: [
        "/editor/index.html", "/editor/../openapi.yaml", "/editor/editor.js/x", "/editor/%2e%2e/Package.swift", "/editor/x.png",
    ])
    func anythingElseUnderEditorIsNotFound(path: String) async throws {
        try await AdminAPITests.withServer { client, _ in
            let response = try await client.execute(uri: path, method: .get)
            #expect(response.status == .notFound)
            #expect(response.headers[.contentType] == "application/json")
        }
    }

    @Test func editorWithoutASlashRedirects() async throws {
        try await AdminAPITests.withServer { client, _ in
            let response = try await client.execute(uri: "/editor", method: .get)
            #expect(response.status == .movedPermanently)
            #expect(response.headers[.location] == "/editor/")
        }
    }

    @Test func onlyGetAndHeadReachTheDashboard() async throws {
        try await AdminAPITests.withServer { client, _ in
            let response = try await client.execute(uri: "/editor/", method: .post)
            #expect(response.status == .methodNotAllowed)
        }
    }

    // MARK: - Reports per day

    static let identifier = "com.example.served.coins"

    @Test func dailyCountsHaveEveryDayOfTheWindowWithZerosBetween() async throws {
        try await AdminAPITests.withServer { client, server in
            let now = Timestamp.now.secondsSince1970
            let twoDaysAgo = now - 2 * 86_400
            _ = try await server.store.store([
                Self.report([Self.identifier], at: twoDaysAgo),
                Self.report([Self.identifier, "com.example.other"], at: twoDaysAgo),
                Self.report([Self.identifier], at: now),
                Self.report(["com.example.other"], at: now),
                Self.report([Self.identifier], at: now - 40 * 86_400),
            ])
            let response = try await client.execute(
                uri: "\(AdminAPITests.appPath)/reports/daily?identifier=\(Self.identifier)&days=7", method: .get,
                headers: server.headers(server.viewer))
            #expect(response.status == .ok)
            let json = try AdminAPITests.json(response)
            #expect(json["identifier"] as? String == Self.identifier)
            let days = try #require(json["days"] as? [[String: Any]])
            #expect(days.count == 7)
            let counted = Dictionary(
                days.compactMap { day in (day["reports"] as? Int).flatMap { $0 > 0 ? (day["day"] as? String ?? "", $0) : nil } },
                uniquingKeysWith: +)
            #expect(counted == [Self.date(twoDaysAgo): 2, Self.date(now): 1])
            let dates = days.compactMap { $0["day"] as? String }
            #expect(dates == dates.sorted())
        }
    }

    @Test(arguments: ["", "?identifier=", "?identifier=a/b", "?identifier=x&days=0", "?identifier=x&days=367", "?identifier=x&days=week"])
    func dailyCountsRefuseABadQuery(query: String) async throws {
        try await AdminAPITests.withServer { client, server in
            let response = try await client.execute(
                uri: "\(AdminAPITests.appPath)/reports/daily\(query)", method: .get, headers: server.headers(server.viewer))
            #expect(response.status == .badRequest)
        }
    }

    @Test func dailyCountsWantATokenAndAKnownApp() async throws {
        try await AdminAPITests.withServer { client, server in
            let path = "/reports/daily?identifier=\(Self.identifier)"
            #expect(try await client.execute(uri: AdminAPITests.appPath + path, method: .get).status == .unauthorized)
            let unknown = try await client.execute(
                uri: "/v1/admin/apps/com.example.unknown\(path)", method: .get, headers: server.headers(server.viewer))
            #expect(unknown.status == .notFound)
        }
    }

    static func report(_ invalid: [String], at seconds: Int64) -> InvalidIdentifierReport {
        InvalidIdentifierReport(
            app: AdminAPITests.app, reportID: UUID().uuidString.lowercased(), receivedAt: Timestamp(secondsSince1970: seconds),
            invalid: invalid, platform: .iOS, environment: .production)
    }

    static func date(_ seconds: Int64) -> String {
        String(Timestamp(secondsSince1970: seconds).iso8601.prefix(10))
    }
}
