import CatalogKit
import CatalogTestSupport
import Foundation
import Storage
import Testing
import Time

/// A real directory under the system's temporary directory, removed by ``remove()``.
///
/// Layout: `<root>/catalog/` for sources and `<root>/public/` for the published tree,
/// as `catalog build` expects them.
struct TemporaryCatalog {
    let root: URL

    init() throws {
        root = FileManager.default.temporaryDirectory
            .appendingPathComponent("catalogkit-tests-\(UUID().uuidString)", isDirectory: true)
        try FileManager.default.createDirectory(at: catalogDirectory, withIntermediateDirectories: true)
    }

    var catalogDirectory: URL { root.appendingPathComponent("catalog", isDirectory: true) }
    var publicDirectory: URL { root.appendingPathComponent("public", isDirectory: true) }
    var tree: PublicTree { PublicTree(root: publicDirectory) }

    /// A real SQLite report store in this catalog's folder, holding `reports`.
    func reportStore(_ reports: [InvalidIdentifierReport] = []) async throws -> SQLiteStore {
        let store = try await SQLiteStore.open(path: root.appendingPathComponent("var/reports-\(UUID().uuidString).sqlite").path)
        _ = try await store.store(reports)
        return store
    }

    /// Writes `text` at `name` inside `catalog/`, creating folders (`com.example.game/a.plist`).
    func write(_ name: String, _ text: String) throws {
        try write(name, bytes: Array(text.utf8))
    }

    func write(_ name: String, bytes: [UInt8]) throws {
        let url = catalogDirectory.appendingPathComponent(name)
        try FileManager.default.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
        try Data(bytes).write(to: url)
    }

    func remove(_ name: String) throws {
        try FileManager.default.removeItem(at: catalogDirectory.appendingPathComponent(name))
    }

    var workflow: CatalogWorkflow {
        CatalogWorkflow(catalogDirectory: catalogDirectory, catalogDisplayPath: "catalog", publicDirectory: publicDirectory)
    }

    /// The diagnostics of `validate()` as printed, for exact comparisons.
    func diagnostics() -> [String] {
        workflow.validate().diagnostics.map(\.description)
    }

    func build(
        at moment: Timestamp, dryRun: Bool = false, publisher configure: (inout Publisher) -> Void = { _ in }
    ) throws -> CatalogWorkflow.Build {
        try workflow.build(at: moment, dryRun: dryRun, publisher: configure)
    }

    /// Builds and requires that the build had no errors.
    @discardableResult
    func publish(at moment: Timestamp, sourceLocation: Testing.SourceLocation = #_sourceLocation) throws -> [PublicationPlan] {
        let build = try self.build(at: moment)
        #expect(build.diagnostics.filter { $0.severity == .error }.map(\.description) == [], sourceLocation: sourceLocation)
        guard !build.hasErrors else { throw BuildFailed() }
        return build.plans
    }

    /// Bytes of a file under `public/`, by relative path.
    func published(_ path: String) -> [UInt8]? {
        FileManager.default.contents(atPath: publicDirectory.appendingPathComponent(path).path).map { [UInt8]($0) }
    }

    /// Every regular file under `public/` with its bytes, by relative path.
    func publicSnapshot() -> [String: [UInt8]] {
        snapshot(of: publicDirectory)
    }

    func cleanUp() {
        try? FileManager.default.removeItem(at: root)
    }
}

/// Runs `body` with a fresh temporary catalog, removed afterwards whatever happens.
func withCatalog<Result>(_ body: (TemporaryCatalog) throws -> Result) throws -> Result {
    let catalog = try TemporaryCatalog()
    defer { catalog.cleanUp() }
    return try body(catalog)
}

/// Every regular file under `directory` (hidden ones included) with its bytes, by relative path.
func snapshot(of directory: URL) -> [String: [UInt8]] {
    var result: [String: [UInt8]] = [:]
    let base = directory.resolvingSymlinksInPath().path
    guard let enumerator = FileManager.default.enumerator(atPath: base) else { return result }
    while let relative = enumerator.nextObject() as? String {
        var isDirectory: ObjCBool = false
        let path = base + "/" + relative
        guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory), !isDirectory.boolValue else { continue }
        result[relative] = FileManager.default.contents(atPath: path).map { [UInt8]($0) } ?? []
    }
    return result
}

/// Every directory under `directory`, by relative path (empty folders count too).
func directories(under directory: URL) -> Set<String> {
    var result = Set<String>()
    let base = directory.resolvingSymlinksInPath().path
    guard let enumerator = FileManager.default.enumerator(atPath: base) else { return result }
    while let relative = enumerator.nextObject() as? String {
        var isDirectory: ObjCBool = false
        if FileManager.default.fileExists(atPath: base + "/" + relative, isDirectory: &isDirectory), isDirectory.boolValue {
            result.insert(relative)
        }
    }
    return result
}

/// A catalog XML document around `body`: the declaration and `<catalog>` take lines 1–2,
/// so the body's first line is line 3.
func catalogXML(app: String, _ body: String) -> String {
    """
    <?xml version="1.0" encoding="UTF-8"?>
    <catalog xmlns="urn:iap-catalog:1" app="\(app)">
    \(body)
    </catalog>

    """
}

func text(_ bytes: [UInt8]?) -> String? {
    bytes.map { String(decoding: $0, as: UTF8.self) }
}

let buildMoment = Timestamp(iso8601: "2026-03-01T12:00:00Z")!

extension Timestamp {
    func adding(_ seconds: Int64) -> Timestamp {
        Timestamp(secondsSince1970: secondsSince1970 + seconds)
    }
}

struct BuildFailed: Error {}

/// Writes `files` into a fresh catalog, validates it with display path `catalog`, and returns
/// the diagnostics as printed.
func validate(_ files: KeyValuePairs<String, String>) throws -> [String] {
    try withCatalog { catalog in
        for (name, text) in files { try catalog.write(name, text) }
        return catalog.diagnostics()
    }
}

/// Indents every line of `text` by `tabs` tabs.
func indented(_ text: String, by tabs: Int) -> String {
    let prefix = String(repeating: "\t", count: tabs)
    return text.split(separator: "\n", omittingEmptySubsequences: false).map { prefix + $0 }.joined(separator: "\n")
}

/// The full form with one product dict per element of `products`, each indented by three tabs.
///
/// Layout, for counting positions: line 4 `<dict>`, 5 `<key>products</key>`, 6 `<array>`,
/// 7 the first product's `<dict>` (column 3), and from line 8 the first product's body, whose
/// unindented lines start at column 4. Each further product starts two lines after the
/// previous one's last line (its `</dict>`, then its own `<dict>`).
func productsPlist(_ products: [String]) -> String {
    var body = "<dict>\n\t<key>products</key>\n\t<array>\n"
    for product in products {
        body += "\t\t<dict>\n" + indented(product, by: 3) + "\n\t\t</dict>\n"
    }
    body += "\t</array>\n</dict>"
    return plist(body)
}

func productsPlist(_ products: String...) -> String {
    productsPlist(products)
}

/// Validates `com.example.game.plist` made of `products` (see ``productsPlist(_:)-([String])`` for positions).
func validate(products: String...) throws -> [String] {
    try validate(["com.example.game.plist": productsPlist(products)])
}

extension TemporaryCatalog {
    /// The bytes of `name` (`products.json`, `catalog.json`, or either with `.gz`) of `variant`,
    /// read through the manifest's `directory`, which may be shared with another variant.
    func feed(
        _ app: String, _ manifest: RevisionManifest, _ variant: Variant, _ name: String,
        sourceLocation: Testing.SourceLocation = #_sourceLocation
    ) throws -> [UInt8] {
        let record = try #require(manifest.record(for: variant), "no record for \(variant)", sourceLocation: sourceLocation)
        return try tree.feedBytes(app, revision: manifest.revision, directory: record.directory, name: name)
    }

    /// Checks that every feed the manifest of `revision` names is in place with the recorded
    /// SHA-256 and size, and that its gzip copy matches its record and decompresses to it.
    @discardableResult
    func expectComplete(
        _ app: String, revision: Int, sourceLocation: Testing.SourceLocation = #_sourceLocation
    ) throws -> RevisionManifest {
        let manifest = try tree.manifest(app, revision: revision)
        #expect(manifest.revision == revision, sourceLocation: sourceLocation)
        #expect(manifest.app == app, sourceLocation: sourceLocation)
        #expect(manifest.variants.first.map { Variant(platform: nil, band: nil) == variantOf($0) } == true, sourceLocation: sourceLocation)
        #expect(
            manifest.variants.first?.directory == "", "the default variant is at the top of the revision folder",
            sourceLocation: sourceLocation)
        for record in manifest.variants {
            for (name, feed) in [("products.json", record.products), ("catalog.json", record.catalog)] {
                let place = "revisions/\(revision)/\(record.directory)\(name) of \(record.platform)/\(record.band)"
                let bytes = try tree.feedBytes(app, revision: revision, directory: record.directory, name: name)
                #expect(ContentHash.sha256Hex(bytes) == feed.sha256, "\(place): hash", sourceLocation: sourceLocation)
                #expect(bytes.count == feed.bytes, "\(place): size", sourceLocation: sourceLocation)
                let gzip = try tree.feedBytes(app, revision: revision, directory: record.directory, name: name + ".gz")
                #expect(ContentHash.sha256Hex(gzip) == feed.gzip.sha256, "\(place).gz: hash", sourceLocation: sourceLocation)
                #expect(gzip.count == feed.gzip.bytes, "\(place).gz: size", sourceLocation: sourceLocation)
                #expect(Gzip.decompress(gzip) == bytes, "\(place).gz: content", sourceLocation: sourceLocation)
            }
        }
        return manifest
    }
}

/// The variant a manifest record describes.
func variantOf(_ record: VariantRecord) -> Variant? {
    let platform: Platform? = record.platform == "any" ? nil : Platform(rawValue: record.platform)
    if record.platform != "any" && platform == nil { return nil }
    if record.band == "any" { return Variant(platform: platform, band: nil) }
    guard let band = AppVersion(record.band) else { return nil }
    return Variant(platform: platform, band: band)
}
