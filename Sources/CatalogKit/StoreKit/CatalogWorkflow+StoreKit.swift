import Foundation
import PropertyList

/// `catalog import storekit`, `catalog import plist` and `catalog export storekit` as functions
/// (docs/storekit.md, docs/editing.md).
extension CatalogWorkflow {
    /// The largest `.storekit` file read: real ones are kilobytes.
    static let maximumStoreKitBytes = 16 << 20

    /// What an import did, or would have done when it has errors (then it wrote nothing).
    public struct ProductImport: Sendable {
        /// Problems in the imported file, the app's sources and the result, errors and warnings.
        public var diagnostics: [Diagnostic]
        /// The source file written (or that would have been), as diagnostics show it.
        public var target: String
        /// What the imported file was recognised as, for a product list (`catalog import plist`).
        public var shape: String?
        /// Identifiers new to the catalog, added to the target file.
        public var added: [String] = []
        /// Identifiers already in the target file whose definitions the import overwrote.
        public var replaced: [String] = []
        /// Products already in the catalog and left as they are.
        public var skipped: [String] = []
        /// Whether the target file changed on disk.
        public var wrote = false
        /// Whether any diagnostic is an error: then nothing was written.
        public var hasErrors: Bool { diagnostics.containsErrors }
    }

    /// Maps the `.storekit` file at `url` onto `app`'s sources and writes them as a canonical
    /// property list: `catalog/<app>.plist`, or `catalog/<app>/storekit.plist` for a folder app.
    ///
    /// A product the app already has is a conflict, reported as a warning and skipped; with
    /// `overwrite`, what the `.storekit` file says about it (type, reference name, subscription
    /// and the StoreKit metadata) replaces what the catalog said, and the rest (status,
    /// platforms, dates, other metadata) stays. The result must pass the catalog rules; if it
    /// does not, or the file is malformed, or the app's sources already have errors, nothing is
    /// written and the diagnostics say why.
    public func importStoreKit(from url: URL, displayPath: String, app: String, overwrite: Bool) throws -> ProductImport {
        var limits = self.limits
        limits.maximumFileBytes = Self.maximumStoreKitBytes
        return try importProducts(
            from: url, displayPath: displayPath, app: app, overwrite: overwrite, limits: limits, metadataKeys: StoreKitMapping.metadataKeys
        ) { bytes in
            var decoder = StoreKitDecoder(file: displayPath, bytes: bytes)
            let products = decoder.decode()
            return (products, decoder.diagnostics, nil)
        }
    }

    /// Maps a product list an app already ships (a property list in one of the shapes
    /// `catalog import plist` recognises, docs/editing.md) onto `app`'s sources, as ``importStoreKit(from:displayPath:app:overwrite:)``
    /// does, and says which shape it read.
    public func importProductList(from url: URL, displayPath: String, app: String, overwrite: Bool) throws -> ProductImport {
        let limits = self.limits
        return try importProducts(
            from: url, displayPath: displayPath, app: app, overwrite: overwrite, limits: limits,
            metadataKeys: ProductListDecoder.metadataKeys
        ) { bytes in
            let read = PropertyListReader(limits: limits).read(SourceFile(path: displayPath, bytes: bytes))
            guard let root = read.root, !read.diagnostics.containsErrors else { return ([], read.diagnostics, nil) }
            var decoder = ProductListDecoder(file: displayPath)
            let products = decoder.decode(root)
            return (products, read.diagnostics + decoder.diagnostics, decoder.shape?.rawValue)
        }
    }

    /// Reads `url`, decodes its products with `decode`, and merges them into `app`'s sources as
    /// one canonical property list; `metadataKeys` are what `overwrite` replaces in the metadata.
    private func importProducts(
        from url: URL, displayPath: String, app: String, overwrite: Bool, limits: ReaderLimits, metadataKeys: [String],
        decode: ([UInt8]) -> (products: [ImportedProduct], diagnostics: [Diagnostic], shape: String?)
    ) throws -> ProductImport {
        let base = catalogDisplayPath.hasSuffix("/") ? String(catalogDisplayPath.dropLast()) : catalogDisplayPath
        let layout = SourceLayout(app: app, directory: catalogDirectory, base: base)
        var result = ProductImport(diagnostics: [], target: layout.target)
        if let problem = AppName.problem(app) {
            result.diagnostics.append(.error(problem, file: layout.target, at: .startOfFile))
            return result
        }
        let bytes: [UInt8]
        switch SourceFile.read(url, displayPath: displayPath, limits: limits) {
        case .success(let source):
            do {
                // An empty file is not an unreadable one: the JSON reader says what is wrong.
                bytes = source.head.isEmpty ? [] : try source.contents()
            } catch let problem {
                result.diagnostics.append(problem)
                return result
            }
        case .failure(let problem):
            result.diagnostics.append(problem)
            return result
        }
        let (imported, decodedDiagnostics, shape) = decode(bytes)
        result.diagnostics = decodedDiagnostics
        result.shape = shape
        if let problem = layout.problem { result.diagnostics.append(.error(problem, file: layout.target, at: .startOfFile)) }
        guard !result.hasErrors else { return result }

        // The app as it stands must be valid: a merge into broken sources cannot be judged.
        let validation = validate()
        let appErrors = validation.diagnostics.filter { $0.severity == .error && layout.owns($0.file) }
        guard appErrors.isEmpty else {
            result.diagnostics.append(
                .error("the app's sources have errors; fix them (catalog validate) before importing", file: layout.target, at: .startOfFile)
            )
            result.diagnostics += appErrors
            return result
        }
        let existing = validation.catalogs.first { $0.app == app }?.products ?? []
        var root = try readTarget(layout)
        var products =
            root.entries.first { $0.key == "products" }.flatMap { entry -> [PropertyListNode]? in
                if case .array(let items) = entry.value.value { return items }
                return nil
            } ?? []

        var origin: [String: SourcePosition] = [:]
        for product in imported {
            origin[product.id] = product.position
            guard let current = existing.first(where: { $0.id == product.id }) else {
                products.append(PropertyListNode(.dictionary(product.fields), at: .startOfFile))
                result.added.append(product.id)
                continue
            }
            let index = products.firstIndex { node in
                if case .dictionary(let fields) = node.value, case .string(let id)? = fields["id"]?.value { return id == product.id }
                return false
            }
            guard overwrite, current.location.file == layout.target, let index, case .dictionary(var fields) = products[index].value else {
                let advice =
                    !overwrite
                    ? "pass --overwrite to replace it" : "import only rewrites \(layout.target); change it where it is defined"
                result.diagnostics.append(
                    .warning(
                        "product '\(product.id)' is already defined at \(current.location); skipped (\(advice))", file: displayPath,
                        at: product.position))
                result.skipped.append(product.id)
                continue
            }
            Self.overwrite(&fields, with: product.fields, metadataKeys: metadataKeys)
            products[index] = PropertyListNode(.dictionary(fields), at: .startOfFile)
            result.replaced.append(product.id)
        }
        // A file of its own names its app; in a folder, the settings may already sit in another file.
        if !layout.isFolder, root["app"] == nil {
            root.entries.insert(
                .init(key: "app", keyPosition: .startOfFile, value: PropertyListNode(.string(app), at: .startOfFile)), at: 0)
        }
        root.set("products", .array(products))
        let candidate = SourcePlist.encode(root)

        // The same rules as `catalog validate`, on the sources as they would be. The history
        // rules need no new run: an import adds products and never changes a status.
        let loaded = CatalogLoader(limits: self.limits).load(directory: catalogDirectory, displayPath: catalogDisplayPath)
        var sources =
            loaded.apps.first { $0.app == app }
            ?? AppSources(
                app: app, definitions: [], origin: layout.target, isIncomplete: false,
                contentDirectory: catalogDirectory.appendingPathComponent(app + CatalogLoader.contentSuffix, isDirectory: true),
                contentDisplayPath: layout.target + CatalogLoader.contentSuffix)
        var decoded: [Diagnostic] = []
        let definition = PlistSourceDecoder(reader: PropertyListReader(limits: self.limits))
            .decode(SourceFile(path: layout.target, bytes: candidate), into: &decoded)
        guard let definition else {
            result.diagnostics += decoded
            return result
        }
        sources.definitions.removeAll { $0.settings.file == layout.target }
        sources.definitions.append(definition)
        sources.definitions.sort { $0.settings.file < $1.settings.file }
        // Each product's own rules ran as its file was decoded: the other files' problems are the loader's.
        let otherFiles = Set(sources.definitions.map(\.settings.file)).subtracting([layout.target])
        let found = decoded + loaded.diagnostics.filter { otherFiles.contains($0.file) } + CatalogRules.check(sources).diagnostics
        result.diagnostics += Self.pointed(
            found, in: layout.target, starts: productStarts(candidate, path: layout.target), to: origin, importedFile: displayPath)
        result.diagnostics.sort()
        guard !result.hasErrors else { return result }

        let targetURL = layout.targetURL
        if FileManager.default.contents(atPath: targetURL.path).map({ [UInt8]($0) }) != candidate {
            try AtomicFile.write(candidate, to: targetURL)
            result.wrote = true
        }
        return result
    }

    /// Replaces what an imported file says about a product, keeping everything else.
    static func overwrite(_ fields: inout PropertyListDictionary, with imported: PropertyListDictionary, metadataKeys: [String]) {
        for key in ["type", "referenceName", "subscription"] { fields.set(key, imported[key]?.value) }
        var metadata = PropertyListDictionary()
        if case .dictionary(let current)? = fields["metadata"]?.value { metadata = current }
        var importedMetadata = PropertyListDictionary()
        if case .dictionary(let values)? = imported["metadata"]?.value { importedMetadata = values }
        for key in metadataKeys { metadata.set(key, importedMetadata[key]?.value) }
        fields.set("metadata", metadata.entries.isEmpty ? nil : .dictionary(metadata))
    }

    /// Diagnostics in the file about to be written point at the imported product they came
    /// from, since that file exists nowhere yet; those about products already in the catalog
    /// were there before the import and are left out.
    private static func pointed(
        _ diagnostics: [Diagnostic], in target: String, starts: [(position: SourcePosition, id: String?)],
        to origin: [String: SourcePosition], importedFile: String
    ) -> [Diagnostic] {
        diagnostics.compactMap { diagnostic in
            // Other files of a folder app did not change: only new errors there matter.
            guard diagnostic.file == target else { return diagnostic.severity == .error ? diagnostic : nil }
            guard let product = starts.last(where: { $0.position <= diagnostic.position }) else { return diagnostic }
            guard let id = product.id, let position = origin[id] else { return diagnostic.severity == .error ? diagnostic : nil }
            var moved = diagnostic
            moved.file = importedFile
            moved.position = position
            if !moved.message.contains("'\(id)'") { moved.message += " (product '\(id)')" }
            return moved
        }
    }

    /// Where each product dict of a plist source starts, with its id: what ``pointed(_:in:starts:to:importedFile:)``
    /// attributes diagnostics by.
    private func productStarts(_ bytes: [UInt8], path: String) -> [(position: SourcePosition, id: String?)] {
        guard case .dictionary(let root)? = PropertyListReader(limits: limits).read(SourceFile(path: path, bytes: bytes)).root?.value,
            case .array(let products)? = root["products"]?.value
        else { return [] }
        return products.map { product in
            guard case .dictionary(let fields) = product.value, case .string(let id)? = fields["id"]?.value else {
                return (product.position, nil)
            }
            return (product.position, id)
        }
    }

    /// The target file's root dict; Apple's minimal form (a root array of ids) becomes the full
    /// form, one product dict per id.
    private func readTarget(_ layout: SourceLayout) throws -> PropertyListDictionary {
        guard FileManager.default.fileExists(atPath: layout.targetURL.path) else { return PropertyListDictionary() }
        let source = try SourceFile.read(layout.targetURL, displayPath: layout.target, limits: limits).get()
        guard let root = PropertyListReader(limits: limits).read(source).root else {
            throw CatalogError.io(path: layout.target, message: "cannot be read again")
        }
        switch root.value {
        case .dictionary(let dictionary):
            return dictionary
        case .array(let ids):
            var dictionary = PropertyListDictionary()
            dictionary.set(
                "products",
                .array(
                    ids.map { id in
                        var product = PropertyListDictionary()
                        product.set("id", id.value)
                        return PropertyListNode(.dictionary(product), at: id.position)
                    }))
            return dictionary
        default:
            throw CatalogError.io(path: layout.target, message: "the root is neither a dict nor an array")
        }
    }

    // MARK: - Export

    /// What an export made: the file's bytes, or nil with the diagnostics that prevented it.
    public struct StoreKitExport: Sendable {
        /// The `.storekit` file's bytes; nil when the sources have errors.
        public var bytes: [UInt8]?
        /// Problems in the app's sources, and what the export had to leave out.
        public var diagnostics: [Diagnostic]
        /// How many products the file holds: those with a type, retired ones left out.
        public var productCount = 0
        /// The `.storekit` format written: 4, which current Xcode versions open, or 5 (Xcode 26) when a
        /// subscription has billing plans or per-plan introductory offers.
        public var format = 4
    }

    /// The `.storekit` file for `app`'s current sources, when they pass the rules.
    public func exportStoreKit(app: String) -> StoreKitExport {
        let base = catalogDisplayPath.hasSuffix("/") ? String(catalogDisplayPath.dropLast()) : catalogDisplayPath
        let layout = SourceLayout(app: app, directory: catalogDirectory, base: base)
        if let problem = AppName.problem(app) {
            return StoreKitExport(diagnostics: [.error(problem, file: layout.target, at: .startOfFile)])
        }
        let validation = validate()
        let own = validation.diagnostics.filter { layout.owns($0.file) }
        guard let catalog = validation.catalogs.first(where: { $0.app == app }) else {
            if own.containsErrors { return StoreKitExport(diagnostics: own) }
            return StoreKitExport(
                diagnostics: [.error("no sources for app '\(app)' in \(base)", file: layout.target, at: .startOfFile)])
        }
        let (bytes, format, diagnostics) = StoreKitEncoder.encode(catalog)
        let count = catalog.products.filter { StoreKitEncoder.isExported($0) && $0.type != nil }.count
        return StoreKitExport(bytes: bytes, diagnostics: own + diagnostics, productCount: count, format: format)
    }
}

/// Where an app's sources are, and which file an import writes.
private struct SourceLayout {
    let app: String
    let directory: URL
    let base: String
    let isFolder: Bool
    /// Why import cannot write this app, if it cannot.
    let problem: String?

    init(app: String, directory: URL, base: String) {
        self.app = app
        self.directory = directory
        self.base = base
        var isDirectory: ObjCBool = false
        let folder = directory.appendingPathComponent(app).path
        isFolder = FileManager.default.fileExists(atPath: folder, isDirectory: &isDirectory) && isDirectory.boolValue
        let xml = FileManager.default.fileExists(atPath: directory.appendingPathComponent("\(app).xml").path)
        problem =
            !isFolder && xml
            ? "\(base)/\(app).xml is catalog XML, which import does not rewrite; move it into a folder \(base)/\(app)/ and import again (the products go to \(base)/\(app)/storekit.plist)"
            : nil
    }

    var target: String { isFolder ? "\(base)/\(app)/storekit.plist" : "\(base)/\(app).plist" }

    var targetURL: URL {
        isFolder
            ? directory.appendingPathComponent(app).appendingPathComponent("storekit.plist")
            : directory.appendingPathComponent("\(app).plist")
    }

    /// Whether a diagnostic's file is one of this app's: its file, folder or feedback file.
    func owns(_ file: String) -> Bool {
        let prefix = "\(base)/\(app)"
        return file == prefix || file.hasPrefix(prefix + "/") || file == prefix + ".plist" || file == prefix + ".xml"
            || file == "\(base)/\(FeedbackFile.name(for: app))"
    }
}
