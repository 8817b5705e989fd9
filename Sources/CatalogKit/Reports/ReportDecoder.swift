import Foundation
import PropertyList

/// Turns the body of `POST /v1/apps/{app}/invalid-identifiers` (PRODUCT.md section 4) into a
/// report, or says exactly what is wrong with it. Nothing is stored from a rejected body.
public enum ReportDecoder {
    public static let maximumBodyBytes = 64 * 1024
    public static let maximumIdentifiers = 1000
    static let maximumAppVersionLength = 32
    static let maximumStorefrontLength = 16
    static let maximumInstallIDLength = 64

    /// The JSON members, typed: JSONDecoder checks syntax and types, the rules below the rest.
    /// Members this version does not know are ignored, so newer clients are not turned away.
    private struct Body: Decodable {
        var invalidProductIdentifiers: [String]
        var requestedProductIdentifiers: [String]?
        var platform: String?
        var appVersion: String?
        var environment: String?
        var storefront: String?
        /// A Double so that `1.5` is named in the message: JSONDecoder's own error for a
        /// fraction in an Int does not say which member it was.
        var feedRevision: Double?
        var installId: String?
        var reportId: String?
    }

    /// Validates `body` for `app`. Without a client `reportId`, `makeReportID` names the report.
    public static func decode(
        _ body: some Collection<UInt8>, app: String, receivedAt: Timestamp,
        makeReportID: () -> String = { UUID().uuidString.lowercased() }
    ) -> Result<InvalidIdentifierReport, ReportRejection> {
        let parsed: Body
        do {
            parsed = try JSONDecoder().decode(Body.self, from: Data(body))
        } catch let error as DecodingError {
            return .failure(ReportRejection(message(for: error)))
        } catch {
            return .failure(ReportRejection("the body is not valid JSON"))
        }
        do {
            return .success(try validate(parsed, app: app, receivedAt: receivedAt, makeReportID: makeReportID))
        } catch {
            return .failure(error)
        }
    }

    private static func validate(
        _ body: Body, app: String, receivedAt: Timestamp, makeReportID: () -> String
    ) throws(ReportRejection) -> InvalidIdentifierReport {
        let invalid = try identifiers(body.invalidProductIdentifiers, field: "invalidProductIdentifiers", allowEmpty: false)
        let requested = try body.requestedProductIdentifiers.map { list throws(ReportRejection) in
            try identifiers(list, field: "requestedProductIdentifiers", allowEmpty: true)
        }
        var report = InvalidIdentifierReport(app: app, reportID: "", receivedAt: receivedAt, invalid: invalid, requested: requested)
        if let name = body.platform {
            guard let platform = Platform(name: name) else {
                throw ReportRejection("platform '\(clip(name))' is not one of \(Platform.expectedList)")
            }
            report.platform = platform
        }
        if let text = body.appVersion {
            guard text.utf8.count <= maximumAppVersionLength, let version = AppVersion(text) else {
                throw ReportRejection("appVersion '\(clip(text))' is not a version such as 2.3.1 (one to four numbers)")
            }
            report.appVersion = version
        }
        if let name = body.environment {
            guard let environment = ReportEnvironment(rawValue: name) else {
                throw ReportRejection("environment '\(clip(name))' is not one of \(ReportEnvironment.expectedList)")
            }
            report.environment = environment
        }
        if let storefront = body.storefront {
            guard (1...maximumStorefrontLength).contains(storefront.utf8.count), storefront.utf8.allSatisfy(isAlphanumeric) else {
                throw ReportRejection(
                    "storefront '\(clip(storefront))' must be 1 to \(maximumStorefrontLength) letters or digits, such as USA")
            }
            report.storefront = storefront
        }
        if let number = body.feedRevision {
            guard number >= 1, number <= Double(Int32.max), number.rounded() == number else {
                throw ReportRejection("feedRevision must be a revision number, 1 or more; got \(number.formatted)")
            }
            report.feedRevision = Int(number)
        }
        if let install = body.installId {
            guard (1...maximumInstallIDLength).contains(install.utf8.count),
                install.utf8.allSatisfy({ isAlphanumeric($0) || $0 == UInt8(ascii: "-") || $0 == UInt8(ascii: "_") })
            else {
                throw ReportRejection(
                    "installId must be 1 to \(maximumInstallIDLength) letters, digits, '-' or '_' (an opaque random id)")
            }
            report.installID = install
        }
        if let reportID = body.reportId {
            guard let uuid = UUID(uuidString: reportID) else {
                throw ReportRejection("reportId '\(clip(reportID))' is not a UUID such as 6F9619FF-8B86-D011-B42D-00C04FC964FF")
            }
            report.reportID = uuid.uuidString.lowercased()
        } else {
            report.reportID = makeReportID()
        }
        return report
    }

    /// The list without repeats, in the client's order, each a valid product identifier.
    private static func identifiers(_ list: [String], field: String, allowEmpty: Bool) throws(ReportRejection) -> [String] {
        if list.isEmpty && !allowEmpty { throw ReportRejection("\(field) is empty; it must list 1 to \(maximumIdentifiers) identifiers") }
        if list.count > maximumIdentifiers {
            throw ReportRejection("\(field) lists \(list.count) identifiers; the limit is \(maximumIdentifiers)")
        }
        var seen = Set<String>()
        var unique: [String] = []
        for (index, id) in list.enumerated() {
            if let problem = IdentifierRules.problem(id) { throw ReportRejection("\(field)[\(index)]: \(clip(problem, to: 200))") }
            if seen.insert(id).inserted { unique.append(id) }
        }
        return unique
    }

    private static func message(for error: DecodingError) -> String {
        switch error {
        case .keyNotFound(let key, let context):
            return "\(path(context.codingPath + [key])) is required"
        case .valueNotFound(_, let context):
            if context.codingPath.isEmpty { return "the body must be a JSON object" }
            return "\(path(context.codingPath)) must not be null"
        case .typeMismatch(let type, let context):
            if context.codingPath.isEmpty { return "the body must be a JSON object" }
            return "\(path(context.codingPath)) must be \(typeName(type))"
        case .dataCorrupted(let context):
            if context.codingPath.isEmpty { return "the body is not valid JSON" }
            return "\(path(context.codingPath)) has an invalid value"
        @unknown default:
            return "the body is not a valid report"
        }
    }

    private static func path(_ codingPath: [any CodingKey]) -> String {
        codingPath.enumerated().map { offset, key in
            key.intValue.map { "[\($0)]" } ?? (offset == 0 ? key.stringValue : ".\(key.stringValue)")
        }.joined()
    }

    private static func typeName(_ type: Any.Type) -> String {
        switch type {
        case is String.Type: "a string"
        // Only feedRevision is a number.
        case is Double.Type: "an integer"
        default: String(describing: type).hasPrefix("Array") ? "an array of strings" : "a JSON object"
        }
    }

    private static func isAlphanumeric(_ byte: UInt8) -> Bool {
        (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) || (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte)
            || (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(byte)
    }

    /// Client text echoed in a message, cut short so that an error never grows with the input.
    private static func clip(_ text: String, to limit: Int = 64) -> String {
        text.count <= limit ? text : String(text.prefix(limit)) + "…"
    }
}

/// Why a report body was refused: a 400 with this message.
public struct ReportRejection: Error, Hashable, CustomStringConvertible {
    public let description: String
    init(_ description: String) { self.description = description }
}

extension Double {
    /// `12` rather than `12.0` for whole numbers, as the client most likely wrote it.
    fileprivate var formatted: String {
        rounded() == self && abs(self) < 1e15 ? String(Int64(self)) : String(self)
    }
}
