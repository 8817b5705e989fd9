import Foundation
import Testing
import Yams

@testable import CatalogServer

/// Every JSON answer that is not a feed, as the server writes it, against its schema in
/// `openapi.yaml`: a member the schema requires and the answer lacks, a member the answer has and the
/// schema does not document, or a value of another type fails here, so the two cannot drift apart.
@Suite struct ServiceJSONTests {
    /// The bundled document, parsed; never changed once read.
    nonisolated(unsafe) static let document: [String: Any] = {
        (try? Yams.load(yaml: String(decoding: OpenAPIDocument.bytes, as: UTF8.self)) as? [String: Any]) ?? [:]
    }()

    /// The JSON schema of a documented answer.
    static func schema(_ path: String, _ method: String, _ status: String) throws -> [String: Any] {
        let paths = try #require(document["paths"] as? [String: Any])
        let operation = try #require((paths[path] as? [String: Any])?[method] as? [String: Any], "\(method) \(path)")
        let responses = try #require(operation["responses"] as? [String: Any])
        let response = resolve(try #require(responses[status] as? [String: Any], "\(method) \(path) \(status)"))
        let content = try #require(response["content"] as? [String: Any])
        return try #require((content["application/json"] as? [String: Any])?["schema"] as? [String: Any])
    }

    static func resolve(_ node: [String: Any]) -> [String: Any] {
        guard let reference = node["$ref"] as? String, reference.hasPrefix("#/") else { return node }
        var target: Any? = document
        for key in reference.dropFirst(2).split(separator: "/") { target = (target as? [String: Any])?[String(key)] }
        return resolve(target as? [String: Any] ?? [:])
    }

    /// A JSON value as the answer holds it: a boolean is never a number, an integer never a string.
    indirect enum Value: Decodable {
        case boolean(Bool)
        case integer(Int)
        case number(Double)
        case string(String)
        case array([Value])
        case object([String: Value])
        case null

        init(from decoder: any Decoder) throws {
            let container = try decoder.singleValueContainer()
            if container.decodeNil() {
                self = .null
            } else if let value = try? container.decode(Bool.self) {
                self = .boolean(value)
            } else if let value = try? container.decode(Int.self) {
                self = .integer(value)
            } else if let value = try? container.decode(Double.self) {
                self = .number(value)
            } else if let value = try? container.decode(String.self) {
                self = .string(value)
            } else if let value = try? container.decode([Value].self) {
                self = .array(value)
            } else {
                self = .object(try container.decode([String: Value].self))
            }
        }

        var typeName: String {
            switch self {
            case .boolean: "boolean"
            case .integer: "integer"
            case .number: "number"
            case .string: "string"
            case .array: "array"
            case .object: "object"
            case .null: "null"
            }
        }

        func hasType(_ type: String) -> Bool {
            typeName == type || (type == "number" && typeName == "integer")
        }
    }

    /// Where `value` departs from `schema`, one line each; empty when it conforms. Objects must document
    /// every member they hold.
    static func problems(_ value: Value, _ node: [String: Any], at path: String = "$") -> [String] {
        let schema = resolve(node)
        if let types = (schema["type"] as? [String]) ?? (schema["type"] as? String).map({ [$0] }),
            !types.contains(where: { value.hasType($0) })
        {
            return ["\(path): \(value.typeName) is not \(types.joined(separator: " or "))"]
        }
        var found: [String] = []
        switch value {
        case .object(let object):
            let properties = schema["properties"] as? [String: Any] ?? [:]
            for required in schema["required"] as? [String] ?? [] where object[required] == nil {
                found.append("\(path): \(required) is required and missing")
            }
            for (key, member) in object.sorted(by: { $0.key < $1.key }) {
                guard let documented = properties[key] as? [String: Any] else {
                    found.append("\(path).\(key) is not documented")
                    continue
                }
                found += problems(member, documented, at: "\(path).\(key)")
            }
        case .array(let array):
            if let items = schema["items"] as? [String: Any] {
                for (index, item) in array.enumerated() { found += problems(item, items, at: "\(path)[\(index)]") }
            }
        case .integer(let number):
            if let minimum = schema["minimum"] as? Int, number < minimum { found.append("\(path): \(number) is below \(minimum)") }
        default:
            break
        }
        return found
    }

    static func parse(_ bytes: [UInt8]) throws -> Value {
        try JSONDecoder().decode(Value.self, from: Data(bytes))
    }

    static let publishedAt = "2026-03-01T12:00:00Z"

    @Test func theAppListIsAsDocumented() throws {
        let list = AppList(apps: [.init(app: "com.example.served", revision: 2, publishedAt: Self.publishedAt)])
        let bytes = ServiceJSON.encode(list)
        #expect(Self.problems(try Self.parse(bytes), try Self.schema("/v1/apps", "get", "200")) == [])
        #expect(try JSONDecoder().decode(AppList.self, from: Data(bytes)) == list)
        #expect(Self.problems(try Self.parse(ServiceJSON.encode(AppList(apps: []))), try Self.schema("/v1/apps", "get", "200")) == [])
    }

    @Test func theRevisionListIsAsDocumented() throws {
        let list = RevisionList(
            app: "com.example.served",
            revisions: [.init(revision: 2, publishedAt: Self.publishedAt), .init(revision: 1, publishedAt: Self.publishedAt)])
        let bytes = ServiceJSON.encode(list)
        #expect(Self.problems(try Self.parse(bytes), try Self.schema("/v1/apps/{app}/revisions", "get", "200")) == [])
        #expect(try JSONDecoder().decode(RevisionList.self, from: Data(bytes)) == list)
    }

    @Test func errorsAreAsDocumented() throws {
        let schema = try Self.schema("/v1/apps/{app}/revisions", "get", "404")
        #expect(Self.problems(try Self.parse(JSONError.body("no published app 'x' \"quoted\" \n")), schema) == [])
    }

    @Test(arguments: [(3, 3, false), (3, 1, false), (3, 3, true), (2, 0, true)])
    func reportAnswersAreAsDocumented(count: Int, stored: Int, duplicate: Bool) throws {
        let schema = try Self.schema("/v1/apps/{app}/invalid-identifiers", "post", "202")
        let answer = ReportIntake.accepted(count: count, stored: stored, duplicate: duplicate)
        #expect(Self.problems(try Self.parse(answer), schema) == [])
    }

    /// The checker itself: what drift looks like.
    @Test func anUndocumentedOrMissingMemberIsFound() throws {
        let schema = try Self.schema("/v1/apps", "get", "200")
        #expect(Self.problems(try Self.parse(Array(#"{"apps":[],"next":1}"#.utf8)), schema) == ["$.next is not documented"])
        #expect(
            Self.problems(try Self.parse(Array(#"{"apps":[{"app":"a","revision":"2"}]}"#.utf8)), schema) == [
                "$.apps[0]: publishedAt is required and missing", "$.apps[0].revision: string is not integer",
            ])
        #expect(Self.problems(try Self.parse(Array(#"{"apps":[{"app":"a","revision":true,"publishedAt":"t"}]}"#.utf8)), schema).count == 1)
    }

    /// Keys are sorted, so that an answer's bytes do not change between requests.
    @Test func answersAreByteStable() {
        let list = AppList(apps: [.init(app: "com.example.served", revision: 2, publishedAt: Self.publishedAt)])
        let first = ServiceJSON.encode(list)
        for _ in 0..<20 { #expect(ServiceJSON.encode(list) == first) }
        #expect(
            String(decoding: first, as: UTF8.self)
                == #"{"apps":[{"app":"com.example.served","publishedAt":"2026-03-01T12:00:00Z","revision":2}]}"#)
    }
}
