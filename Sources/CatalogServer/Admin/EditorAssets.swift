import CatalogKit
import Foundation
import HTTPSemantics
import HTTPTypes
import Hummingbird
import NIOCore
import Time

/// The web dashboard at `/editor/`: three files bundled as resources of this module, read once
/// and served from memory.
///
/// The set is fixed, so request paths never reach the filesystem: anything else under
/// `/editor/` is a 404. The dashboard talks to the editor API only; it holds a bearer token, so
/// the Content-Security-Policy allows scripts, styles and requests from this origin alone (no
/// inline script, no framing) and an injected string can do nothing with it.
enum EditorAssets {
    /// One file of the dashboard.
    struct Asset: Sendable {
        let contentType: String
        let bytes: [UInt8]
        let entityTag: String
    }

    /// Path segment after `/editor/` (empty for the page itself) → resource name, extension and type.
    static let files: [String: (name: String, extension: String, contentType: String)] = [
        "": ("index", "html", "text/html; charset=utf-8"),
        "editor.css": ("editor", "css", "text/css; charset=utf-8"),
        "editor.js": ("editor", "js", "text/javascript; charset=utf-8"),
    ]

    static let contentSecurityPolicy =
        "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; "
        + "form-action 'self'; base-uri 'none'; frame-ancestors 'none'"

    /// Read once; a build without the resources serves a page that says so rather than failing.
    static let assets: [String: Asset] = files.mapValues { file in
        let url = Bundle.module.url(forResource: file.name, withExtension: file.extension, subdirectory: "editor")
        let bytes = url.flatMap { try? Data(contentsOf: $0) }.map { [UInt8]($0) } ?? Array("/* missing from this build */\n".utf8)
        return Asset(
            contentType: file.contentType, bytes: bytes, entityTag: ContentHash.entityTag(sha256: ContentHash.sha256Hex(bytes)))
    }

    /// `no-cache`: browsers keep a copy but revalidate it (a cheap 304), so a new server version
    /// is picked up on the next load.
    static func response(for name: String, request: Request) -> Response {
        guard let asset = assets[name] else { return JSONError.response(.notFound, "no such resource: \(request.uri.path)") }
        var headers: HTTPFields = [
            .contentType: asset.contentType, .cacheControl: "no-cache", .eTag: asset.entityTag,
            .contentSecurityPolicy: contentSecurityPolicy, .xContentTypeOptions: "nosniff", .referrerPolicy: "no-referrer",
        ]
        let conditions = ConditionalRequest(ifNoneMatch: request.headers[values: .ifNoneMatch])
        if conditions.evaluate(
            entityTag: asset.entityTag, lastModified: Timestamp(secondsSince1970: 0), now: Timestamp(secondsSince1970: 0))
            == .notModified
        {
            headers[.contentType] = nil
            return Response(status: .notModified, headers: headers)
        }
        return Response(status: .ok, headers: headers, body: ResponseBody(byteBuffer: ByteBuffer(bytes: asset.bytes)))
    }

    /// `/editor` → `/editor/`, so that the page's relative links resolve under it.
    static func redirect() -> Response {
        Response(status: .movedPermanently, headers: [.location: "/editor/", .cacheControl: "no-cache"])
    }
}

extension HTTPField.Name {
    /// Not among HTTPTypes' names; the page's requests carry no Referer anywhere.
    fileprivate static let referrerPolicy = HTTPField.Name("Referrer-Policy")!
}
