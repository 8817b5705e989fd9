import CatalogKit
import CatalogTestSupport
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import NIOCore
import Testing
import Yams

@testable import CatalogServer

/// The server against `openapi.yaml`: the same routes on both sides, and for one request to each
/// documented operation, a status and content type the document lists.
@Suite struct OpenAPITests {
    static let methods = ["get", "head", "post", "put", "delete", "patch"]

    /// The document as served, parsed.
    static func document(_ client: some TestClientProtocol) async throws -> [String: Any] {
        let response = try await client.execute(uri: "/openapi.yaml", method: .get)
        #expect(response.status == .ok)
        #expect(response.headers[.contentType] == "application/yaml")
        let text = String(buffer: response.body)
        #expect(text.hasPrefix("openapi: 3.1.0"))
        return try #require(try Yams.load(yaml: text) as? [String: Any])
    }

    @Test func theDocumentAndTheResponderKnowTheSamePaths() async throws {
        try await AdminAPITests.withServer { client, _ in
            let document = try await Self.document(client)
            let paths = try #require(document["paths"] as? [String: Any])
            let templates = CatalogResponder.routes.routes.map(\.template)
            #expect(Set(paths.keys) == Set(templates))
            for template in templates {
                #expect(CatalogResponder.routes.match(Self.sample(template)) != nil, "\(template)")
            }
        }
    }

    /// docs/serving.md lists every route the server answers, with its methods, exactly as the
    /// document does: a route added to one and not the other fails here.
    @Test func theServingGuideListsEveryRoute() async throws {
        try await AdminAPITests.withServer { client, _ in
            let paths = try #require(try await Self.document(client)["paths"] as? [String: [String: Any]])
            let documented = Set(
                paths.map { path, item in
                    Self.methods.filter { item[$0] != nil }.map { $0.uppercased() }.joined(separator: "/") + " " + path
                })
            let repository = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
                .deletingLastPathComponent()
            let guide = try String(contentsOf: repository.appendingPathComponent("docs/serving.md"), encoding: .utf8)
            // The table's first column: "| `GET/HEAD /v1/…` | …".
            let listed = Set(
                guide.split(separator: "\n").compactMap { line -> String? in
                    guard line.hasPrefix("| `"), let end = line.dropFirst(3).firstIndex(of: "`") else { return nil }
                    return String(line[line.index(line.startIndex, offsetBy: 3)..<end])
                })
            #expect(documented.subtracting(listed).sorted() == [], "routes docs/serving.md does not list")
            #expect(listed.subtracting(documented).sorted() == [], "routes docs/serving.md lists that openapi.yaml does not")
        }
    }

    @Test func everyDocumentedOperationAnswersAsDocumented() async throws {
        try await AdminAPITests.withServer { client, server in
            let document = try await Self.document(client)
            let paths = try #require(document["paths"] as? [String: [String: Any]])
            let components = try #require(document["components"] as? [String: Any])
            var checked = 0
            for (template, item) in paths.sorted(by: { $0.key < $1.key }) {
                for method in Self.methods {
                    guard let operation = item[method] as? [String: Any] else { continue }
                    let responses = try #require(operation["responses"] as? [String: Any], "\(method) \(template)")
                    var headers = server.headers(server.editor, ifMatch: "\"0\"", json: true)
                    headers[.ifMatch] = template.hasSuffix("/publish") || template.contains("/products") ? "\"0\"" : nil
                    // One connection for all, HEADs included: each response must be framed for its request.
                    let response = try await client.execute(
                        uri: Self.sample(template), method: HTTPRequest.Method(method.uppercased())!, headers: headers,
                        body: ["post", "put"].contains(method) ? ByteBuffer(string: Self.body(template)) : nil)
                    let status = String(response.status.code)
                    let documented = try #require(
                        responses[status] as? [String: Any],
                        "\(method.uppercased()) \(template) answered \(status): \(String(buffer: response.body))")
                    let resolved = Self.resolve(documented, in: components)
                    if let content = resolved["content"] as? [String: Any], method != "head" {
                        let type = response.headers[.contentType]?.split(separator: ";").first.map(String.init)
                        #expect(
                            type.map { content.keys.contains($0) } == true,
                            "\(method.uppercased()) \(template) \(status): \(type ?? "none")")
                    }
                    checked += 1
                }
            }
            #expect(checked >= CatalogResponder.routes.routes.count)
        }
    }

    /// A template with sample values that exist in the fixture.
    static func sample(_ template: String) -> String {
        template.replacingOccurrences(of: "{app}", with: CatalogServerTests.app).replacingOccurrences(of: "{revision}", with: "1")
            .replacingOccurrences(of: "{id}", with: "com.example.served.coins").replacingOccurrences(of: "{platform}", with: "ios")
            .replacingOccurrences(of: "{band}", with: "any").replacingOccurrences(of: "{sha256}", with: String(repeating: "0", count: 64))
    }

    static func body(_ template: String) -> String {
        template.hasSuffix("invalid-identifiers") ? ReportExamples.valid : #"{"id":"com.example.served.coins"}"#
    }

    /// A response object, or the one its `$ref` names.
    static func resolve(_ object: [String: Any], in components: [String: Any]) -> [String: Any] {
        guard let reference = object["$ref"] as? String else { return object }
        let name = reference.split(separator: "/").last.map(String.init) ?? ""
        return (components["responses"] as? [String: Any])?[name] as? [String: Any] ?? object
    }
}
