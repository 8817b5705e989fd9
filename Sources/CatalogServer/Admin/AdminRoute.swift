import CatalogKit
import HTTPTypes

/// The editor API's paths, under `/v1/admin/`.
enum AdminRoute: Equatable {
    case apps
    case app(String)
    case products(app: String)
    case product(app: String, id: String)
    case retire(app: String, id: String)
    case publish(app: String)
    case reports(app: String)
    /// One identifier's reports per day, for the dashboard's chart.
    case dailyReports(app: String)
    case release(app: String, id: String)
    /// An editor's quarantine of an identifier past the budget or a store-wide alert.
    case quarantine(app: String, id: String)
    case revisions(app: String)
    case diff(app: String)
    case rollback(app: String, revision: Int)
    /// A customer of the app by any of its keys, for the dashboard's customer page.
    case customer(app: String, id: String)
    /// What that customer may download of the app's content now, and why, for the same page.
    case customerContent(app: String, id: String)
    case audit

    /// `segments` after `v1/admin`.
    init?(_ segments: ArraySlice<String>) {
        let parts = Array(segments)
        switch parts.count {
        case 1 where parts[0] == "audit": self = .audit
        case 1 where parts[0] == "apps": self = .apps
        case 2...5 where parts[0] == "apps":
            let app = parts[1]
            guard AppName.problem(app) == nil else { return nil }
            switch Array(parts.dropFirst(2)) {
            case []: self = .app(app)
            case ["products"]: self = .products(app: app)
            case ["publish"]: self = .publish(app: app)
            case ["reports"]: self = .reports(app: app)
            case ["revisions"]: self = .revisions(app: app)
            case ["diff"]: self = .diff(app: app)
            case let rest where rest.count == 3 && rest[0] == "revisions" && rest[2] == "rollback":
                guard rest[1].utf8.allSatisfy({ $0 >= 48 && $0 <= 57 }), let revision = Int(rest[1]), revision > 0 else { return nil }
                self = .rollback(app: app, revision: revision)
            case ["reports", "daily"]: self = .dailyReports(app: app)
            case let rest where rest.count == 2 && rest[0] == "customers" && Self.isIdentifier(rest[1]):
                self = .customer(app: app, id: rest[1])
            case let rest where rest.count == 3 && rest[0] == "customers" && rest[2] == "content" && Self.isIdentifier(rest[1]):
                self = .customerContent(app: app, id: rest[1])
            case let rest where rest.count == 2 && rest[0] == "products" && Self.isIdentifier(rest[1]):
                self = .product(app: app, id: rest[1])
            case let rest where rest.count == 3 && rest[0] == "products" && rest[2] == "retire" && Self.isIdentifier(rest[1]):
                self = .retire(app: app, id: rest[1])
            case let rest where rest.count == 3 && rest[0] == "feedback" && rest[2] == "release" && Self.isIdentifier(rest[1]):
                self = .release(app: app, id: rest[1])
            case let rest where rest.count == 3 && rest[0] == "feedback" && rest[2] == "quarantine" && Self.isIdentifier(rest[1]):
                self = .quarantine(app: app, id: rest[1])
            default: return nil
            }
        default: return nil
        }
    }

    /// Product identifiers as the rules allow them (at most 100 of `[A-Za-z0-9._-]`), so that
    /// nothing else in a path reaches the sources.
    static func isIdentifier(_ text: String) -> Bool {
        (1...100).contains(text.utf8.count)
            && text.utf8.allSatisfy { byte in
                (byte >= 48 && byte <= 57) || (byte >= 65 && byte <= 90) || (byte >= 97 && byte <= 122)
                    || byte == UInt8(ascii: ".") || byte == UInt8(ascii: "_") || byte == UInt8(ascii: "-")
            }
    }

    /// The methods each path answers, for 405 and `Allow`.
    var allowed: [HTTPRequest.Method] {
        switch self {
        case .apps, .app, .reports, .dailyReports, .audit, .revisions, .diff, .customer, .customerContent: [.get]
        case .products, .retire, .publish, .release, .quarantine, .rollback: [.post]
        case .product: [.put]
        }
    }

    /// Whether a request changes something, and so needs the editor role. A dry-run publish
    /// only shows what would change: viewers may see it.
    func changes(dryRun: Bool) -> Bool {
        switch self {
        case .apps, .app, .reports, .dailyReports, .audit, .revisions, .diff, .customer, .customerContent: false
        case .publish: !dryRun
        case .products, .product, .retire, .release, .quarantine, .rollback: true
        }
    }
}
