import Foundation
import Time

/// Turns the body of `POST /v1/apps/{app}/invalid-identifiers` (docs/contract.md section 4) into a
/// report, or says exactly what is wrong with it. Nothing is stored from a rejected body.
///
/// An Android app reports the products Play Billing could not fetch as `unfetchedProducts`
/// (docs/reports.md, "Unfetched products on Android"): those Play says do not exist, or whose id it
/// refuses, count as invalid; the others say nothing against the product.
public enum ReportDecoder {
    /// The largest body the endpoint reads, in bytes; the server refuses a bigger one with 413.
    public static let maximumBodyBytes = 64 * 1024
    /// The most identifiers either list may name.
    public static let maximumIdentifiers = 1000
    static let maximumAppVersionLength = 32
    static let maximumStorefrontLength = 16
    static let maximumInstallIDLength = 64
    /// An AppTransaction JWS with its three-certificate chain is 4 to 6 KiB.
    static let maximumAppTransactionLength = 16 * 1024

    /// The members this version reads, as sent. Members it does not know are skipped, so that
    /// newer clients are not turned away.
    private struct Body {
        var invalidProductIdentifiers: [String]?
        var requestedProductIdentifiers: [String]?
        var platform: String?
        var appVersion: String?
        var environment: String?
        var storefront: String?
        var feedRevision: Substring?
        var installId: String?
        var reportId: String?
        var appTransaction: String?
        var unfetchedProducts: [UnfetchedProduct]?
        var seen: Set<String> = []

        /// Reads member `key` at the scanner as the type it must have.
        mutating func read(_ key: String, _ scanner: inout JSONScanner) throws {
            guard seen.insert(key).inserted else { throw ReportRejection("member '\(ReportDecoder.clip(key))' appears twice") }
            switch key {
            case "invalidProductIdentifiers": invalidProductIdentifiers = try strings(key, &scanner)
            case "requestedProductIdentifiers": requestedProductIdentifiers = try strings(key, &scanner)
            case "platform": platform = try string(key, &scanner)
            case "appVersion": appVersion = try string(key, &scanner)
            case "environment": environment = try string(key, &scanner)
            case "storefront": storefront = try string(key, &scanner)
            case "installId": installId = try string(key, &scanner)
            case "reportId": reportId = try string(key, &scanner)
            case "appTransaction": appTransaction = try string(key, &scanner)
            case "feedRevision":
                try expect(.number, key, "an integer", &scanner)
                feedRevision = try scanner.readNumber()
            case "unfetchedProducts": unfetchedProducts = try unfetched(key, &scanner)
            default: try scanner.skipValue()
            }
        }

        private func string(_ key: String, _ scanner: inout JSONScanner) throws -> String {
            try expect(.string, key, "a string", &scanner)
            return try scanner.readString()
        }

        private func strings(_ key: String, _ scanner: inout JSONScanner) throws -> [String] {
            try expect(.array, key, "an array of strings", &scanner)
            var list: [String] = []
            try scanner.readArray { index, scanner in
                try expect(.string, "\(key)[\(index)]", "a string", &scanner)
                list.append(try scanner.readString())
            }
            return list
        }

        /// `[{"productId", "productType", "statusCode"}]`, as Play Billing Library 8's
        /// `UnfetchedProduct` says them.
        private func unfetched(_ key: String, _ scanner: inout JSONScanner) throws -> [UnfetchedProduct] {
            try expect(.array, key, "an array of objects", &scanner)
            var list: [UnfetchedProduct] = []
            try scanner.readArray { index, scanner in
                let name = "\(key)[\(index)]"
                try expect(.object, name, "an object", &scanner)
                var productId: String?
                var status: Int?
                try scanner.readObject { member, scanner in
                    switch member {
                    case "productId": productId = try string("\(name).productId", &scanner)
                    case "statusCode":
                        try expect(.number, "\(name).statusCode", "an integer", &scanner)
                        let number = try scanner.readNumber()
                        // JSON has one number type: 3.0 is the code 3 as much as 3 is.
                        guard let code = Int(number) ?? Double(number).flatMap({ Int(exactly: $0) }), (0...99).contains(code) else {
                            throw ReportRejection("\(name).statusCode must be one of Play's status codes (0 to 99)")
                        }
                        status = code
                    case "productType":
                        let type = try string("\(name).productType", &scanner)
                        guard type == "inapp" || type == "subs" else { throw ReportRejection("\(name).productType must be inapp or subs") }
                    default: try scanner.skipValue()
                    }
                }
                guard let productId else { throw ReportRejection("\(name).productId is required") }
                guard let status else { throw ReportRejection("\(name).statusCode is required") }
                list.append(UnfetchedProduct(productId: productId, status: UnfetchedProduct.Status(code: status)))
            }
            return list
        }

        private func expect(_ kind: JSONScanner.Kind, _ name: String, _ description: String, _ scanner: inout JSONScanner) throws {
            let found = try scanner.peekKind()
            if found == .null { throw ReportRejection("\(name) must not be null") }
            if found != kind { throw ReportRejection("\(name) must be \(description)") }
        }
    }

    /// Validates `body` for `app`. Without a client `reportId`, `makeReportID` names the report.
    public static func decode(
        _ body: some Collection<UInt8>, app: String, receivedAt: Timestamp,
        makeReportID: () -> String = { UUID().uuidString.lowercased() }
    ) -> Result<InvalidIdentifierReport, ReportRejection> {
        let bytes = Array(body)
        do {
            let parsed = try bytes.withUnsafeBufferPointer { buffer in
                var scanner = JSONScanner(buffer)
                guard try scanner.peekKind() == .object else { throw ReportRejection("the body must be a JSON object") }
                var parsed = Body()
                try scanner.readObject { key, scanner in try parsed.read(key, &scanner) }
                try scanner.expectEnd()
                return parsed
            }
            return .success(try validate(parsed, app: app, receivedAt: receivedAt, makeReportID: makeReportID))
        } catch let error as JSONScanner.SyntaxError {
            return .failure(ReportRejection("the body is not valid JSON: \(error.message)"))
        } catch let rejection as ReportRejection {
            return .failure(rejection)
        } catch {
            return .failure(ReportRejection("the body is not a valid report"))
        }
    }

    private static func validate(
        _ body: Body, app: String, receivedAt: Timestamp, makeReportID: () -> String
    ) throws(ReportRejection) -> InvalidIdentifierReport {
        let unfetched = body.unfetchedProducts ?? []
        guard body.invalidProductIdentifiers != nil || body.unfetchedProducts != nil else {
            throw ReportRejection("invalidProductIdentifiers is required (or unfetchedProducts, from an Android app)")
        }
        if unfetched.count > maximumIdentifiers {
            throw ReportRejection("unfetchedProducts lists \(unfetched.count) products; the limit is \(maximumIdentifiers)")
        }
        for (index, product) in unfetched.enumerated() {
            if let problem = IdentifierRules.problem(product.productId) {
                throw ReportRejection("unfetchedProducts[\(index)].productId: \(clip(problem, to: 200))")
            }
        }
        // What Play says does not exist counts as invalid, beside what the app listed itself.
        var invalid =
            try body.invalidProductIdentifiers.map { list throws(ReportRejection) in
                try identifiers(list, field: "invalidProductIdentifiers", allowEmpty: false)
            } ?? []
        for product in unfetched where product.status.countsAsInvalid && !invalid.contains(product.productId) {
            invalid.append(product.productId)
        }
        let requested = try body.requestedProductIdentifiers.map { list throws(ReportRejection) in
            try identifiers(list, field: "requestedProductIdentifiers", allowEmpty: true)
        }
        var report = InvalidIdentifierReport(app: app, reportID: "", receivedAt: receivedAt, invalid: invalid, requested: requested)
        report.unfetched = unfetched
        if let name = body.platform {
            guard let platform = Platform(name: name) else {
                throw ReportRejection("platform '\(clip(name))' is not one of \(Platform.expectedList)")
            }
            report.platform = platform
        }
        if body.unfetchedProducts != nil {
            guard report.platform == nil || report.platform == .android else {
                throw ReportRejection("unfetchedProducts come from Play Billing: the platform must be android")
            }
            report.platform = .android
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
            // JSON has one number type: 12.0 and 1.2e1 are the integer 12 as much as 12 is.
            guard let revision = Int32(number) ?? Double(number).flatMap({ Int32(exactly: $0) }), revision >= 1 else {
                throw ReportRejection("feedRevision must be a revision number, 1 or more; got \(clip(String(number)))")
            }
            report.feedRevision = Int(revision)
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
        if let jws = body.appTransaction {
            // Checked by the server's verifier; here only bounded, so that a report never holds more.
            guard (1...maximumAppTransactionLength).contains(jws.utf8.count) else {
                throw ReportRejection("appTransaction must be a JWS of at most \(maximumAppTransactionLength) bytes")
            }
            report.appTransaction = jws
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

    private static func isAlphanumeric(_ byte: UInt8) -> Bool {
        (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) || (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte)
            || (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(byte)
    }

    /// Client text echoed in a message, cut short so that an error never grows with the input.
    fileprivate static func clip(_ text: String, to limit: Int = 64) -> String {
        text.count <= limit ? text : String(text.prefix(limit)) + "…"
    }
}

/// Why a report body was refused: a 400 with this message.
public struct ReportRejection: Error, Hashable, CustomStringConvertible {
    /// What is wrong with the body, as the client reads it.
    public let description: String
    init(_ description: String) { self.description = description }
}
