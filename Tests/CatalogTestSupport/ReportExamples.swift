/// Report bodies and what the server must answer, shared by the decoder's tests and the tests
/// that send them through HTTP.
public enum ReportExamples {
    /// A body every check accepts.
    public static let valid = """
        {"invalidProductIdentifiers":["com.example.level2","com.example.level2","com.example.gone"],
         "requestedProductIdentifiers":["com.example.level1","com.example.level2","com.example.gone"],
         "platform":"iOS","appVersion":"2.3.1","environment":"production","storefront":"USA",
         "feedRevision":12,"installId":"7c4a8d09-install","reportId":"6F9619FF-8B86-D011-B42D-00C04FC964FF","futureField":{"a":1}}
        """

    /// Bodies refused with 400, and the exact message.
    public static let rejected: [(body: String, message: String)] = [
        ("", "the body is not valid JSON: it ends where a value was expected"),
        ("{", "the body is not valid JSON: it ends too early"),
        (#"{"invalidProductIdentifiers":["a"]} x"#, "the body is not valid JSON: unexpected 'x' at byte 36"),
        (#"{"invalidProductIdentifiers":["a",]}"#, "the body is not valid JSON: unexpected ']' at byte 34"),
        (#"{'invalidProductIdentifiers':["a"]}"#, "the body is not valid JSON: unexpected ''' at byte 1"),
        (#"{"invalidProductIdentifiers":["a\x"]}"#, "the body is not valid JSON: unexpected 'x' at byte 33"),
        (#"{"invalidProductIdentifiers":["\ud800"]}"#, "the body is not valid JSON: a lone surrogate in a string at byte 31"),
        ("{\"invalidProductIdentifiers\":[\"a\tb\"]}", "the body is not valid JSON: a control character inside a string at byte 32"),
        (#"{"invalidProductIdentifiers":["a"],"feedRevision":012}"#, "the body is not valid JSON: a number with a leading zero at byte 50"),
        (
            #"{"invalidProductIdentifiers":["a"],"x":\#(String(repeating: "[", count: 40))}"#,
            "the body is not valid JSON: values nested more than 32 deep"
        ),
        (#"{"invalidProductIdentifiers":["a"],"platform":"iOS","platform":"macOS"}"#, "member 'platform' appears twice"),
        (#"{"invalidProductIdentifiers":["a"],"platform":true}"#, "platform must be a string"),
        ("[]", "the body must be a JSON object"),
        ("null", "the body must be a JSON object"),
        ("{}", "invalidProductIdentifiers is required (or unfetchedProducts, from an Android app)"),
        (#"{"invalidProductIdentifiers":null}"#, "invalidProductIdentifiers must not be null"),
        (#"{"invalidProductIdentifiers":"com.example.a"}"#, "invalidProductIdentifiers must be an array of strings"),
        (#"{"invalidProductIdentifiers":[1]}"#, "invalidProductIdentifiers[0] must be a string"),
        (#"{"invalidProductIdentifiers":[]}"#, "invalidProductIdentifiers is empty; it must list 1 to 1000 identifiers"),
        (
            #"{"invalidProductIdentifiers":["\#((0...1000).map { "com.example.p\($0)" }.joined(separator: #"",""#))"]}"#,
            "invalidProductIdentifiers lists 1001 identifiers; the limit is 1000"
        ),
        (
            #"{"invalidProductIdentifiers":["com.example.a","com example"]}"#,
            "invalidProductIdentifiers[1]: product id 'com example' contains ' '; only letters, digits, '.', '_' and '-' are allowed"
        ),
        (#"{"invalidProductIdentifiers":[""]}"#, "invalidProductIdentifiers[0]: product id is empty"),
        (
            #"{"invalidProductIdentifiers":["com.example.a"],"requestedProductIdentifiers":["ok",7]}"#,
            "requestedProductIdentifiers[1] must be a string"
        ),
        (
            #"{"invalidProductIdentifiers":["com.example.a"],"platform":"fireos"}"#,
            "platform 'fireos' is not one of iOS, macOS, tvOS, watchOS, visionOS or Android"
        ),
        (#"{"invalidProductIdentifiers":["com.example.a"],"platform":5}"#, "platform must be a string"),
        (
            #"{"invalidProductIdentifiers":["com.example.a"],"environment":"Production"}"#,
            "environment 'Production' is not one of production, sandbox or xcode"
        ),
        (
            #"{"invalidProductIdentifiers":["com.example.a"],"appVersion":"2.x"}"#,
            "appVersion '2.x' is not a version such as 2.3.1 (one to four numbers)"
        ),
        (
            #"{"invalidProductIdentifiers":["com.example.a"],"storefront":"U S"}"#,
            "storefront 'U S' must be 1 to 16 letters or digits, such as USA"
        ),
        (#"{"invalidProductIdentifiers":["com.example.a"],"feedRevision":0}"#, "feedRevision must be a revision number, 1 or more; got 0"),
        (
            #"{"invalidProductIdentifiers":["com.example.a"],"feedRevision":1.5}"#,
            "feedRevision must be a revision number, 1 or more; got 1.5"
        ),
        (#"{"invalidProductIdentifiers":["com.example.a"],"feedRevision":"12"}"#, "feedRevision must be an integer"),
        (
            #"{"invalidProductIdentifiers":["com.example.a"],"installId":"\#(String(repeating: "a", count: 65))"}"#,
            "installId must be 1 to 64 letters, digits, '-' or '_' (an opaque random id)"
        ),
        (
            #"{"invalidProductIdentifiers":["com.example.a"],"installId":"a@b"}"#,
            "installId must be 1 to 64 letters, digits, '-' or '_' (an opaque random id)"
        ),
        (
            #"{"invalidProductIdentifiers":["com.example.a"],"reportId":"retry-1"}"#,
            "reportId 'retry-1' is not a UUID such as 6F9619FF-8B86-D011-B42D-00C04FC964FF"
        ),
    ]
}
