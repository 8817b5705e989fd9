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
}
