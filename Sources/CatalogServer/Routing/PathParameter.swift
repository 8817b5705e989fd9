import CatalogKit

/// What may stand in a path where a template has a parameter, checked when the path is matched,
/// before anything is looked up: request paths never reach the filesystem or a store unchecked.
///
/// A segment a parameter refuses matches no route, and the request is answered 404 like any
/// unknown path. Each ``RouteTable`` names the parameters its templates use.
struct PathParameter: Sendable {
    let accepts: @Sendable (String) -> Bool

    /// A bundle identifier (``AppName``): an app's name is a directory name in `public/`.
    static let appName = PathParameter { AppName.problem($0) == nil }

    /// A revision: a positive decimal number, digits only (no sign, no spaces).
    static let revision = PathParameter { text in
        text.utf8.allSatisfy { $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") } && (Int(text) ?? 0) > 0
    }

    /// A variant's platform key as the publisher names them: 1 to 16 lowercase ASCII letters.
    /// ``FeedIndex`` says which exist.
    static let platformKey = PathParameter { text in
        (1...16).contains(text.utf8.count) && text.utf8.allSatisfy { $0 >= UInt8(ascii: "a") && $0 <= UInt8(ascii: "z") }
    }

    /// A variant's band key: `any`, or up to 40 of digits and dots (`17.0`).
    static let bandKey = PathParameter { text in
        text == "any"
            || ((1...40).contains(text.utf8.count)
                && text.utf8.allSatisfy { ($0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9")) || $0 == UInt8(ascii: ".") })
    }

    /// A customer's key: a UUID or Apple's numeric ids; 1 to 128 of `[A-Za-z0-9._-]`, so that
    /// nothing else reaches the store.
    static let customerKey = PathParameter { isIdentifier($0, maximumLength: 128) }

    /// A product identifier as the rules allow them: 1 to 100 of `[A-Za-z0-9._-]`, so that
    /// nothing else in a path reaches the sources (the editor API's `{id}`).
    static let productIdentifier = PathParameter { isIdentifier($0, maximumLength: 100) }

    /// Anything: the handler verifies it before any disk access (a content URL's digest,
    /// with its signature, by ``ContentFiles``).
    static let verifiedByHandler = PathParameter { _ in true }

    /// 1 to `maximumLength` bytes of `[A-Za-z0-9._-]`.
    static func isIdentifier(_ text: String, maximumLength: Int) -> Bool {
        (1...maximumLength).contains(text.utf8.count)
            && text.utf8.allSatisfy { byte in
                (byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9")) || (byte >= UInt8(ascii: "A") && byte <= UInt8(ascii: "Z"))
                    || (byte >= UInt8(ascii: "a") && byte <= UInt8(ascii: "z")) || byte == UInt8(ascii: ".") || byte == UInt8(ascii: "_")
                    || byte == UInt8(ascii: "-")
            }
    }
}

/// The parameters of a matched path, by the names its template gives them.
struct PathParameters: Sendable {
    private let values: [(name: String, value: String)]

    init(_ values: [(name: String, value: String)]) {
        self.values = values
    }

    /// The value of `{name}`, or nil when the template has no such parameter.
    func value(_ name: String) -> String? {
        values.first { $0.name == name }?.value
    }

    /// The value of `{name}`, which the route's template has: a handler that asks for another
    /// is a mistake of the table, which `OpenAPITests` runs into, as it calls every route with a sample path.
    subscript(name: String) -> String {
        guard let value = value(name) else { preconditionFailure("the route's template has no {\(name)}") }
        return value
    }

    /// `{revision}`, which ``PathParameter/revision`` made a positive number.
    var revision: Int {
        guard let revision = Int(self["revision"]) else { preconditionFailure("{revision} was checked to be a number") }
        return revision
    }
}
