import CatalogKit
import Foundation
import HTTPSemantics
import Testing
import Time

/// The pure parts of editing: If-Match and product bodies.
@Suite struct EditingTests {
    static let tag = "\"abc\""

    @Test(arguments: [
        ([], IfMatch.Outcome.missing),
        (["\"abc\""], .matches),
        (["\"x\", \"abc\""], .matches),
        (["\"x\"", "\"abc\""], .matches),
        (["*"], .matches),
        (["W/\"abc\""], .fails),
        (["\"abd\""], .fails),
        (["abc"], .fails),
    ])
    func ifMatchComparesStrongly(lines: [String], outcome: IfMatch.Outcome) {
        #expect(IfMatch.evaluate(lines, current: Self.tag) == outcome)
    }

    @Test func aBodyBecomesTheDictTheSourcesHold() throws {
        let definition = try ProductJSON.definition(
            Array(
                #"{"id":"a.b","displayOrder":2,"availableFrom":"2030-01-01T00:00:00Z","metadata":{"rate":0.5,"on":true,"when":"2030-01-01T00:00:00Z"},"quarantine":"x"}"#
                    .utf8))
        #expect(definition.entries.map(\.key) == ["id", "displayOrder", "availableFrom", "metadata"])
        guard case .integer(2)? = definition["displayOrder"]?.value else { Issue.record("displayOrder"); return }
        guard case .date(let from)? = definition["availableFrom"]?.value else { Issue.record("availableFrom"); return }
        #expect(from == Timestamp(iso8601: "2030-01-01T00:00:00Z"))
        guard case .dictionary(let metadata)? = definition["metadata"]?.value else { Issue.record("metadata"); return }
        guard case .real(0.5)? = metadata["rate"]?.value, case .boolean(true)? = metadata["on"]?.value else {
            Issue.record("metadata values")
            return
        }
        // Only the product's own date keys become dates: metadata is free-form.
        guard case .string? = metadata["when"]?.value else { Issue.record("metadata date"); return }
    }

    @Test(arguments: [
        ("", "the body is not valid JSON"),
        ("[]", "the body must be a JSON object"),
        (#"{"id":null}"#, "'id' is null, which has no plist form; leave the member out instead"),
        (
            #"{"id":"a","subscription":{"x":[1,null]}}"#,
            "'subscription.x[1]' is null, which has no plist form; leave the member out instead"
        ),
        (#"{"id":"a","id":"b"}"#, "member 'id' appears twice"),
        (#"{"n":1e999}"#, "number 1e999 has no plist form"),
        (#"{"id":"a"} x"#, "the body is not valid JSON"),
    ])
    func badBodiesAreNamed(body: String, message: String) {
        #expect(throws: ProductJSON.Problem.self) { try ProductJSON.definition(Array(body.utf8)) }
        do {
            _ = try ProductJSON.definition(Array(body.utf8))
        } catch {
            #expect(error.description.hasPrefix(message), "\(error.description)")
        }
    }
}
