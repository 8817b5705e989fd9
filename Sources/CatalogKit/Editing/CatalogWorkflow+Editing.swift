import Foundation
import PropertyList
import Time

/// Why an editor's change was not made. The code tells an API which status to answer with.
public struct EditError: Error, CustomStringConvertible {
    /// What kind of failure it was.
    public enum Code: Sendable, Hashable {
        /// No such app, or no such product in it.
        case notFound
        /// The app's sources are not property lists that the API may rewrite.
        case notEditable
        /// The sources moved since the revision the editor started from.
        case stale
        /// The change breaks a rule; `diagnostics` says which.
        case invalid
    }

    /// What kind of failure it was: what an API maps to a status.
    public var code: Code
    public var description: String
    /// The problems in the sources, when they are the reason.
    public var diagnostics: [Diagnostic] = []

    /// An error with its message, and the diagnostics behind it when there are some.
    public init(_ code: Code, _ description: String, diagnostics: [Diagnostic] = []) {
        self.code = code
        self.description = description
        self.diagnostics = diagnostics
    }
}

/// A change to one product, as the editor API asks for it.
public enum ProductEdit: Sendable {
    /// A new product, keys as in the sources.
    case create(PropertyListDictionary)
    /// The whole definition of `id` replaced.
    case update(id: String, PropertyListDictionary)
    /// `id` marked `retired`: App Store identifiers are never deleted.
    case retire(id: String)
}

/// Editing the sources and publishing one app, for the editor API.
///
/// Every change is checked against the *source revision* the editor read, under the build lock,
/// so that two editors cannot overwrite each other: see ``sourceRevision(_:)``. Changes are
/// written back into the app's property-list sources in canonical form (``SourcePlist``); the
/// files stay the source of truth.
extension CatalogWorkflow {
    /// The current state of what `app` publishes from, as a strong hash: its source files (names
    /// and bytes), its feedback file, and the revision the next publication follows. Any edit, a
    /// release, a new verdict or a publication moves it; nil when the app has no sources.
    public func sourceRevision(_ app: String) throws -> String? {
        let files = sourceFiles(of: app)
        guard !files.isEmpty else { return nil }
        var material: [UInt8] = []
        func add(_ name: String, _ bytes: [UInt8]) {
            material += Array("\(name)\0\(bytes.count)\0".utf8) + bytes
        }
        for file in files + [feedbackURL(app)] {
            guard let data = FileManager.default.contents(atPath: file.path) else { continue }
            add(String(file.path.dropFirst(catalogDirectory.path.count)), [UInt8](data))
        }
        let published = try PublicTree(root: publicDirectory).currentManifest(app)?.revision ?? 0
        add("published", Array(String(published).utf8))
        return ContentHash.sha256Hex(material)
    }

    /// The files that define `app`, in the order the loader merges them.
    func sourceFiles(of app: String) -> [URL] {
        guard AppName.problem(app) == nil else { return [] }
        let fileManager = FileManager.default
        let folder = catalogDirectory.appendingPathComponent(app, isDirectory: true)
        var isDirectory: ObjCBool = false
        if fileManager.fileExists(atPath: folder.path, isDirectory: &isDirectory), isDirectory.boolValue {
            let names = (try? fileManager.contentsOfDirectory(atPath: folder.path)) ?? []
            return names.sorted().filter(CatalogLoader.isSource).map { folder.appendingPathComponent($0) }
        }
        return ["plist", "xml"].map { catalogDirectory.appendingPathComponent("\(app).\($0)") }
            .filter { fileManager.fileExists(atPath: $0.path) }
    }

    /// One app as an editor sees it: its products (as publication snapshots describe them),
    /// verdicts, diagnostics and where it stands.
    public struct AppState: Sendable {
        /// The app's bundle identifier.
        public var app: String
        /// The source revision the state was read at (``CatalogWorkflow/sourceRevision(_:)``): what an edit's If-Match names.
        public var sourceRevision: String
        /// The source files, as display paths.
        public var files: [String]
        /// Why the API cannot change this app's sources; nil when it can.
        public var notEditable: String?
        /// The app's current manifest; nil when it was never published.
        public var published: RevisionManifest?
        /// Empty while the sources have errors: `diagnostics` says what to fix.
        public var products: [Product]
        /// The app's feedback file as read; empty while the sources have errors.
        public var feedback: FeedbackFile
        /// This app's diagnostics only.
        public var diagnostics: [Diagnostic]
    }

    /// The state of `app`; a `.notFound` error when it has no sources.
    public func appState(_ app: String) throws -> AppState {
        if let problem = AppName.problem(app) { throw EditError(.notFound, problem) }
        guard let revision = try sourceRevision(app) else { throw unknownApp(app) }
        let validation = validate()
        let catalog = validation.catalogs.first { $0.app == app }
        let files = sourceFiles(of: app)
        return AppState(
            app: app, sourceRevision: revision, files: files.map(displayPath), notEditable: Self.notEditable(files),
            published: try PublicTree(root: publicDirectory).currentManifest(app), products: catalog?.products ?? [],
            feedback: catalog?.feedback ?? FeedbackFile(), diagnostics: diagnostics(of: app, in: validation.diagnostics))
    }

    /// The apps that have sources, by name; found from file names alone, without reading them.
    public func sourceApps() -> [String] {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: catalogDirectory.path)) ?? []
        let apps = names.map { name in CatalogLoader.isSource(name) ? (name as NSString).deletingPathExtension : name }
        return Set(apps).filter { AppName.problem($0) == nil && !sourceFiles(of: $0).isEmpty }.sorted()
    }

    /// What an edit did.
    public struct EditResult: Sendable {
        /// The product as the sources now define it.
        public var product: Product
        /// The file written, as a display path.
        public var file: String
        /// The source revision before the edit.
        public var before: String
        /// The source revision after the edit.
        public var after: String
        /// One line for the audit log, such as "update com.example.gold in catalog/com.example.app.plist:
        /// status cleared → draft".
        public var summary: String
    }

    /// Makes `edit` to `app`'s sources if their source revision is still one `expected` accepts
    /// (an If-Match) and the result passes every rule `catalog validate` applies; writes the
    /// changed file canonically. Holds the build lock, so that no build, feedback run or other
    /// edit interleaves between the check and the write.
    public func edit(app: String, _ edit: ProductEdit, expected: (String) -> Bool) throws -> EditResult {
        if let problem = AppName.problem(app) { throw EditError(.notFound, problem) }
        let lock = try BuildLock(publicDirectory: publicDirectory)
        defer { withExtendedLifetime(lock) {} }
        guard let before = try sourceRevision(app) else { throw unknownApp(app) }
        guard expected(before) else {
            throw EditError(.stale, "'\(app)' changed since you read it: edited, released or published meanwhile")
        }
        let files = sourceFiles(of: app)
        if let reason = Self.notEditable(files) { throw EditError(.notEditable, reason) }

        var roots: [PropertyListDictionary] = []
        for file in files {
            let read = PropertyListReader(limits: limits).read(
                (try? SourceFile.read(file, displayPath: displayPath(file), limits: limits).get())
                    ?? SourceFile(path: displayPath(file), bytes: []))
            guard let root = read.root, !read.diagnostics.containsErrors else {
                throw EditError(.invalid, "\(displayPath(file)) cannot be read; fix it first", diagnostics: read.diagnostics)
            }
            roots.append(try Self.fullForm(root, file: displayPath(file)))
        }

        // Where the product is: a file index and its index in that file's `products`.
        func locate(_ id: String) throws -> (file: Int, index: Int) {
            for (file, root) in roots.enumerated() {
                if let index = Self.products(of: root).firstIndex(where: { Self.id(of: $0) == id }) { return (file, index) }
            }
            throw EditError(.notFound, "'\(app)' has no product '\(id)'")
        }
        let target: Int
        let id: String
        var summary: String
        switch edit {
        case .create(let definition):
            guard let newID = Self.id(of: definition) else { throw EditError(.invalid, "a new product needs an 'id' string") }
            // A folder app's new products go into its last file, after everything defined so far.
            target = roots.count - 1
            id = newID
            Self.modifyProducts(&roots[target]) { $0.append(PropertyListNode(.dictionary(definition), at: .startOfFile)) }
            summary = "create \(id) in \(displayPath(files[target]))"
        case .update(let updatedID, var definition):
            if let given = Self.id(of: definition), given != updatedID {
                throw EditError(.invalid, "the body's id '\(given)' is not the product's id '\(updatedID)'; ids never change")
            }
            definition.set("id", .string(updatedID))
            let place = try locate(updatedID)
            target = place.file
            id = updatedID
            summary = "update \(id) in \(displayPath(files[target]))"
            Self.modifyProducts(&roots[target]) { $0[place.index] = PropertyListNode(.dictionary(definition), at: .startOfFile) }
        case .retire(let retiredID):
            let place = try locate(retiredID)
            target = place.file
            id = retiredID
            summary = "retire \(id) in \(displayPath(files[target]))"
            Self.modifyProducts(&roots[target]) { products in
                guard case .dictionary(var product) = products[place.index].value else { return }
                product.set("status", .string(ProductStatus.retired.rawValue))
                products[place.index] = PropertyListNode(.dictionary(product), at: .startOfFile)
            }
        }

        let bytes = SourcePlist.encode(roots[target])
        let validation = validate(overriding: [files[target]: bytes])
        let found = diagnostics(of: app, in: validation.diagnostics)
        guard !found.containsErrors, let catalog = validation.catalogs.first(where: { $0.app == app }),
            let product = catalog.products.first(where: { $0.id == id })
        else {
            throw EditError(.invalid, "the change breaks the catalog's rules; nothing was written", diagnostics: found)
        }
        if case .update = edit, let old = validate().catalogs.first(where: { $0.app == app })?.products.first(where: { $0.id == id }) {
            // Field by field, as a dry run describes a changed product.
            let diff = try ProductDiff(
                old: [(id, FeedRenderer.encode(old, for: .snapshot))], new: [(id, FeedRenderer.encode(product, for: .snapshot))])
            summary += diff.changed.first.map { ": " + $0.details.joined(separator: ", ") } ?? ": unchanged"
        }
        if FileManager.default.contents(atPath: files[target].path).map({ [UInt8]($0) }) != bytes {
            try AtomicFile.write(bytes, to: files[target])
        }
        return EditResult(
            product: product, file: displayPath(files[target]), before: before, after: try sourceRevision(app) ?? before, summary: summary)
    }

    /// What publishing one app did, or would do.
    public struct AppPublication: Sendable {
        /// The plan, published unless a dry run.
        public var plan: PublicationPlan
        /// The source revision before the publication.
        public var before: String
        /// The source revision after it; a new published revision moves it.
        public var after: String
        /// The hash of the current manifest before, for the audit log.
        public var manifestBefore: String?
    }

    /// Publishes `app` alone, as `catalog build` would publish it, if its source revision is
    /// one `expected` accepts (when given) and its sources pass the rules; a dry run plans and
    /// writes nothing. Other apps' errors do not stop it: an editor publishes the app they changed.
    public func publish(
        app: String, expected: ((String) -> Bool)?, dryRun: Bool, at moment: Timestamp, note: RevisionNote = RevisionNote(),
        publisher configure: (inout Publisher) -> Void = { _ in }
    ) throws -> AppPublication {
        if let problem = AppName.problem(app) { throw EditError(.notFound, problem) }
        let lock = dryRun ? nil : try BuildLock(publicDirectory: publicDirectory)
        defer { withExtendedLifetime(lock) {} }
        guard let before = try sourceRevision(app) else { throw unknownApp(app) }
        if let expected, !expected(before) {
            throw EditError(.stale, "'\(app)' changed since you read it: edited, released or published meanwhile")
        }
        let validation = validate()
        let found = diagnostics(of: app, in: validation.diagnostics)
        guard !found.containsErrors, let catalog = validation.catalogs.first(where: { $0.app == app }) else {
            throw EditError(.invalid, "the sources of '\(app)' have errors; nothing was published", diagnostics: found)
        }
        let tree = PublicTree(root: publicDirectory)
        let manifestBefore = tree.currentManifestHash(app)
        let plans = try publish([catalog], at: moment, dryRun: dryRun, note: note, publisher: configure)
        return AppPublication(
            plan: plans[0], before: before, after: try sourceRevision(app) ?? before, manifestBefore: manifestBefore)
    }

    // MARK: - Helpers

    /// Rewrites each of `app`'s property-list sources that is Apple's plain array of identifiers
    /// (`product_ids.plist`) into the full form: a dict whose `products` holds one `id` dict per
    /// identifier, in the same order, every identifier kept. Only the full form can give a
    /// product a status, which retiring a published identifier needs (`catalog convert`,
    /// docs/catalog-format.md). Files already in the full form are left as they are. Holds the
    /// build lock, as an edit does.
    ///
    /// - Returns: the files rewritten, as diagnostics name them; empty when none was an array.
    /// - Throws: ``EditError`` when the app has no sources or a file cannot be read; then nothing
    ///   is written. Catalog XML is left as it is: it can give a product a status.
    public func convertIdentifierArrays(app: String) throws -> [String] {
        if let problem = AppName.problem(app) { throw EditError(.notFound, problem) }
        let lock = try BuildLock(publicDirectory: publicDirectory)
        defer { withExtendedLifetime(lock) {} }
        let files = sourceFiles(of: app)
        guard !files.isEmpty else { throw unknownApp(app) }
        var rewritten: [(url: URL, bytes: [UInt8])] = []
        // Catalog XML gives a product a status already: only property lists can be the array.
        for file in files where file.pathExtension.lowercased() == "plist" {
            let read = PropertyListReader(limits: limits).read(
                (try? SourceFile.read(file, displayPath: displayPath(file), limits: limits).get())
                    ?? SourceFile(path: displayPath(file), bytes: []))
            guard let root = read.root, !read.diagnostics.containsErrors else {
                throw EditError(.invalid, "\(displayPath(file)) cannot be read; fix it first", diagnostics: read.diagnostics)
            }
            guard case .array = root.value else { continue }
            var full = try Self.fullForm(root, file: displayPath(file))
            // A file of its own names its app, as `catalog import` writes it; in a folder the
            // settings may sit in another file.
            if file.deletingLastPathComponent().standardizedFileURL == catalogDirectory.standardizedFileURL {
                full.entries.insert(
                    .init(key: "app", keyPosition: .startOfFile, value: PropertyListNode(.string(app), at: .startOfFile)), at: 0)
            }
            rewritten.append((file, SourcePlist.encode(full)))
        }
        for file in rewritten { try AtomicFile.write(file.bytes, to: file.url) }
        return rewritten.map { displayPath($0.url) }
    }

    private func unknownApp(_ app: String) -> EditError {
        EditError(.notFound, "unknown app '\(app)': no \(app).plist, \(app).xml or \(app)/ in \(catalogDisplayPath)")
    }

    private func displayPath(_ url: URL) -> String {
        let base = catalogDisplayPath.hasSuffix("/") ? String(catalogDisplayPath.dropLast()) : catalogDisplayPath
        return base + String(url.path.dropFirst(catalogDirectory.path.count))
    }

    /// The diagnostics about `app`'s sources and feedback file.
    private func diagnostics(of app: String, in diagnostics: [Diagnostic]) -> [Diagnostic] {
        let base = catalogDisplayPath.hasSuffix("/") ? String(catalogDisplayPath.dropLast()) : catalogDisplayPath
        let prefixes = ["\(base)/\(app).", "\(base)/\(app)/"]
        return diagnostics.filter { diagnostic in
            diagnostic.file == "\(base)/\(app)" || prefixes.contains { diagnostic.file.hasPrefix($0) }
        }
    }

    /// Catalog XML has no canonical writer; rewriting it as a plist would change its format
    /// behind the editor's back.
    private static func notEditable(_ files: [URL]) -> String? {
        guard let xml = files.first(where: { $0.pathExtension.lowercased() == "xml" }) else { return nil }
        return
            "only property-list sources can be edited through the API; \(xml.lastPathComponent) is catalog XML: edit it in the repository"
    }

    /// The full form of a source's root: Apple's `product_ids.plist` array becomes `products`.
    private static func fullForm(_ root: PropertyListNode, file: String) throws -> PropertyListDictionary {
        switch root.value {
        case .dictionary(let dictionary):
            return dictionary
        case .array(let items):
            let products = items.map { item -> PropertyListNode in
                var product = PropertyListDictionary()
                product.set("id", item.value)
                return PropertyListNode(.dictionary(product), at: item.position)
            }
            var dictionary = PropertyListDictionary()
            dictionary.set("products", .array(products))
            return dictionary
        default:
            throw EditError(.invalid, "\(file) has a root that is neither an array nor a dict; fix it first")
        }
    }

    private static func products(of root: PropertyListDictionary) -> [PropertyListNode] {
        if case .array(let items)? = root["products"]?.value { return items }
        return []
    }

    private static func modifyProducts(_ root: inout PropertyListDictionary, _ change: (inout [PropertyListNode]) -> Void) {
        var items = products(of: root)
        change(&items)
        root.set("products", .array(items))
    }

    private static func id(of node: PropertyListNode) -> String? {
        guard case .dictionary(let product) = node.value else { return nil }
        return id(of: product)
    }

    private static func id(of product: PropertyListDictionary) -> String? {
        if case .string(let id)? = product["id"]?.value { return id }
        return nil
    }
}
