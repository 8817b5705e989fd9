import Foundation
import PropertyList

/// The layout of `public/` and reading what is published there.
///
/// ```
/// v1/apps/<app>/manifest.json                 current manifest, replaced last
/// v1/apps/<app>/products.json[.gz]            default variant, for static hosting
/// v1/apps/<app>/catalog.json[.gz]
/// v1/apps/<app>/revisions/<n>/                immutable once renamed into place
///     manifest.json  identifiers.tsv  products.jsonl.gz (every product, every field)
///     products.json[.gz]  catalog.json[.gz]   default variant
///     variants/<platform|any>/<band|any>/products.json[.gz], catalog.json[.gz]
/// ```
public struct PublicTree: Sendable {
    public let root: URL

    /// Every product with every field, one JSON object per line, gzip-compressed.
    public static let snapshotName = "products.jsonl.gz"

    public init(root: URL) {
        self.root = root
    }

    public var appsDirectory: URL { root.appendingPathComponent("v1/apps", isDirectory: true) }

    public func appDirectory(_ app: String) -> URL {
        appsDirectory.appendingPathComponent(app, isDirectory: true)
    }

    public func revisionsDirectory(_ app: String) -> URL {
        appDirectory(app).appendingPathComponent("revisions", isDirectory: true)
    }

    public func revisionDirectory(_ app: String, _ revision: Int) -> URL {
        revisionsDirectory(app).appendingPathComponent(String(revision), isDirectory: true)
    }

    public func currentManifestURL(_ app: String) -> URL {
        appDirectory(app).appendingPathComponent("manifest.json")
    }

    /// Apps with a current manifest, sorted.
    public func publishedApps() -> [String] {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: appsDirectory.path)) ?? []
        return names.filter { AppName.problem($0) == nil && FileManager.default.fileExists(atPath: currentManifestURL($0).path) }.sorted()
    }

    /// The current manifest of `app`, nil if it was never published.
    public func currentManifest(_ app: String) throws -> RevisionManifest? {
        let url = currentManifestURL(app)
        guard FileManager.default.fileExists(atPath: url.path) else { return nil }
        return try decodeManifest(at: url)
    }

    public func manifest(_ app: String, revision: Int) throws -> RevisionManifest {
        try decodeManifest(at: revisionDirectory(app, revision).appendingPathComponent("manifest.json"))
    }

    private func decodeManifest(at url: URL) throws -> RevisionManifest {
        do {
            let manifest = try JSONDecoder().decode(RevisionManifest.self, from: Data(contentsOf: url))
            guard manifest.format == RevisionManifest.currentFormat else {
                throw CatalogError.corruptPublication(path: url.path, message: "manifest format \(manifest.format) is not supported")
            }
            return manifest
        } catch let error as CatalogError {
            throw error
        } catch {
            throw CatalogError.corruptPublication(path: url.path, message: "\(error)")
        }
    }

    public func history(_ app: String, revision: Int) throws -> IdentifierHistory {
        let url = revisionDirectory(app, revision).appendingPathComponent("identifiers.tsv")
        guard let data = FileManager.default.contents(atPath: url.path) else {
            throw CatalogError.corruptPublication(path: url.path, message: "missing")
        }
        return try IdentifierHistory(tsv: [UInt8](data))
    }

    /// The bytes of a published feed file of `revision`.
    public func feedBytes(_ app: String, revision: Int, directory: String, name: String) throws -> [UInt8] {
        let url = revisionDirectory(app, revision).appendingPathComponent(directory + name)
        guard let data = FileManager.default.contents(atPath: url.path) else {
            throw CatalogError.corruptPublication(path: url.path, message: "missing")
        }
        return [UInt8](data)
    }

    /// The product snapshot of a revision: each product's JSON by id, in source order.
    public func productSnapshot(_ app: String, revision: Int) throws -> [(id: String, json: [UInt8])] {
        let url = revisionDirectory(app, revision).appendingPathComponent(Self.snapshotName)
        guard let data = FileManager.default.contents(atPath: url.path), let bytes = Gzip.decompress([UInt8](data)) else {
            throw CatalogError.corruptPublication(path: url.path, message: "missing or not gzip")
        }
        return try bytes.split(separator: 0x0A).map { line in
            guard let object = try? JSONSerialization.jsonObject(with: Data(line)) as? [String: Any],
                let id = object["id"] as? String
            else { throw CatalogError.corruptPublication(path: url.path, message: "bad line") }
            return (id, Array(line))
        }
    }
}

extension PublicTree {
    /// SHA-256 of `app`'s current manifest file: what the audit log records before and after a
    /// publication, since the manifest names every feed's hash.
    public func currentManifestHash(_ app: String) -> String? {
        FileManager.default.contents(atPath: currentManifestURL(app).path).map { ContentHash.sha256Hex($0) }
    }
}
