import Foundation

/// `openapi.yaml`, the OpenAPI 3.1 description of every route, bundled with the server and
/// served as it is at `/openapi.yaml`.
enum OpenAPIDocument {
    /// Read once; a build without the resource serves a document that says so rather than failing.
    static let bytes: [UInt8] = {
        guard let url = Bundle.module.url(forResource: "openapi", withExtension: "yaml"), let data = try? Data(contentsOf: url) else {
            return Array("# openapi.yaml is missing from this build's resources\n".utf8)
        }
        return [UInt8](data)
    }()

    /// The document without the admin listener's paths (`/v1/admin/…`, `/editor…`, `/metrics`,
    /// as their routes say: ``RouteListener``): what the public listener describes when the two
    /// are split.
    static let publicHalf: [UInt8] = {
        var kept: [Substring] = []
        var skipping = false
        for line in String(decoding: bytes, as: UTF8.self).split(separator: "\n", omittingEmptySubsequences: false) {
            if line.hasPrefix("  /") {
                // A path of `paths:`, two spaces in; everything indented further belongs to it.
                let template = line.dropFirst(2).dropLast(line.hasSuffix(":") ? 1 : 0)
                skipping = CatalogResponder.routes.route(template: String(template))?.listener == .admin
            } else if let first = line.first, first != " " {
                skipping = false  // the next top-level key: `paths:` has ended
            }
            if !skipping { kept.append(line) }
        }
        return Array(kept.joined(separator: "\n").utf8)
    }()
}
