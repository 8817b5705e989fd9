import Foundation
import PropertyList

/// The source files of one app, decoded, each product checked on its own; the rules across
/// products and files have not run yet.
public struct AppSources: Sendable {
    /// The bundle identifier taken from the file or folder name.
    public var app: String
    /// The app's files that could be decoded, in the order they merge (file-name order in a folder).
    public var definitions: [SourceDefinition]
    /// The file name or folder that defines the app, for app-level diagnostics.
    public var origin: String
    /// Whether some file of the app could not be read or decoded: its products are unknown,
    /// so rules about the app as a whole (such as vanished identifiers) cannot be judged.
    public var isIncomplete: Bool
    /// The app's content folder: `<app>/content/` in a folder app, `<app>.content/` beside a
    /// single-file one (docs/catalog-format.md, "Content"). It need not exist.
    public var contentDirectory: URL
    /// How the content folder appears in diagnostics.
    public var contentDisplayPath: String

    /// Sources of `app` decoded from `origin`, with its content folder at `contentDirectory`.
    public init(
        app: String, definitions: [SourceDefinition], origin: String, isIncomplete: Bool, contentDirectory: URL, contentDisplayPath: String
    ) {
        self.app = app
        self.definitions = definitions
        self.origin = origin
        self.isIncomplete = isIncomplete
        self.contentDirectory = contentDirectory
        self.contentDisplayPath = contentDisplayPath
    }
}

/// Finds the apps in a catalog directory and decodes their files.
///
/// Layout: `<app>.plist`, `<app>.xml`, or a folder `<app>/` whose `*.plist` and `*.xml` files
/// are merged in file-name order. `*.feedback.plist` files are feedback verdicts, not sources.
public struct CatalogLoader: Sendable {
    /// Bounds on every file read.
    public var limits: ReaderLimits
    /// Contents to read instead of the file at each path: a proposed edit, checked by the same
    /// rules before it is written.
    public var overrides: [String: [UInt8]] = [:]

    /// A loader that reads with `limits`.
    public init(limits: ReaderLimits = ReaderLimits()) {
        self.limits = limits
    }

    static let sourceExtensions: Set<String> = ["plist", "xml"]
    static let feedbackSuffix = ".feedback.plist"
    /// The content folder of a single-file app is `<app>.content/` beside it.
    static let contentSuffix = ".content"
    /// The content folder of a folder app is `content/` inside it.
    static let contentFolderName = "content"

    /// Decodes every app under `directory`; `displayPath` is how that directory appears in diagnostics.
    public func load(directory: URL, displayPath: String) -> (apps: [AppSources], diagnostics: [Diagnostic]) {
        var diagnostics: [Diagnostic] = []
        let base = displayPath.hasSuffix("/") ? String(displayPath.dropLast()) : displayPath
        let fileManager = FileManager.default
        guard let names = try? fileManager.contentsOfDirectory(atPath: directory.path) else {
            return ([], [.error("cannot read the catalog directory", file: base, at: .startOfFile)])
        }
        var filesByApp: [String: [(url: URL, display: String)]] = [:]
        var originByApp: [String: String] = [:]
        var contentByApp: [String: (url: URL, display: String)] = [:]
        // `<app>.content/` beside `<app>.plist` or `<app>.xml` holds that app's content, not an app.
        let singleFileApps = Set(names.filter { Self.isSource($0) }.map { ($0 as NSString).deletingPathExtension })
        for name in names.sorted() where !name.hasPrefix(".") {
            let url = directory.appendingPathComponent(name)
            let display = "\(base)/\(name)"
            var isDirectory: ObjCBool = false
            guard fileManager.fileExists(atPath: url.path, isDirectory: &isDirectory) else { continue }
            let app: String
            var files: [(URL, String)]
            let content: (url: URL, display: String)
            if isDirectory.boolValue {
                if name.hasSuffix(Self.contentSuffix), singleFileApps.contains(String(name.dropLast(Self.contentSuffix.count))) { continue }
                app = name
                content = (url.appendingPathComponent(Self.contentFolderName, isDirectory: true), "\(display)/\(Self.contentFolderName)")
                let inner = (try? fileManager.contentsOfDirectory(atPath: url.path)) ?? []
                files = inner.sorted().filter { Self.isSource($0) }.map { (url.appendingPathComponent($0), "\(display)/\($0)") }
                if files.isEmpty {
                    diagnostics.append(.warning("folder has no .plist or .xml sources", file: display, at: .startOfFile))
                    continue
                }
            } else {
                guard Self.isSource(name) else { continue }
                app = (name as NSString).deletingPathExtension
                files = [(url, display)]
                content = (
                    directory.appendingPathComponent(app + Self.contentSuffix, isDirectory: true), "\(base)/\(app)\(Self.contentSuffix)"
                )
            }
            if let earlier = originByApp[app] {
                diagnostics.append(
                    .error(
                        "app '\(app)' is already defined by \(earlier); use one file or one folder per app", file: display, at: .startOfFile
                    ))
                continue
            }
            if let problem = AppName.problem(app) {
                diagnostics.append(.error(problem, file: display, at: .startOfFile))
                continue
            }
            originByApp[app] = display
            filesByApp[app] = files
            contentByApp[app] = content
        }

        var apps: [AppSources] = []
        for app in filesByApp.keys.sorted() {
            var definitions: [SourceDefinition] = []
            var isIncomplete = false
            for (url, display) in filesByApp[app]! {
                var fileDiagnostics: [Diagnostic] = []
                let definition = decodeFile(url, display: display, into: &fileDiagnostics)
                if let definition { definitions.append(definition) }
                if definition == nil || fileDiagnostics.containsErrors { isIncomplete = true }
                diagnostics += fileDiagnostics
            }
            let content = contentByApp[app]!
            apps.append(
                AppSources(
                    app: app, definitions: definitions, origin: originByApp[app]!, isIncomplete: isIncomplete,
                    contentDirectory: content.url, contentDisplayPath: content.display))
        }
        return (apps, diagnostics)
    }

    /// Whether a file in `catalog/` (or an app's folder) is a source: a feedback file is not.
    static func isSource(_ name: String) -> Bool {
        !name.hasPrefix(".") && !name.hasSuffix(Self.feedbackSuffix)
            && Self.sourceExtensions.contains((name as NSString).pathExtension.lowercased())
    }

    /// Decodes one file, choosing the format by its root element rather than its extension.
    func decodeFile(_ url: URL, display: String, into diagnostics: inout [Diagnostic]) -> SourceDefinition? {
        let source: SourceFile
        let read = overrides[url.path].map { Result<SourceFile, Diagnostic>.success(SourceFile(path: display, bytes: $0)) }
        switch read ?? SourceFile.read(url, displayPath: display, limits: limits) {
        case .success(let file): source = file
        case .failure(let diagnostic):
            diagnostics.append(diagnostic)
            return nil
        }
        if let problem = source.formatProblem() {
            diagnostics.append(problem)
            return nil
        }
        if isCatalogXML(source) {
            let (root, readDiagnostics) = XMLElementReader(limits: limits).read(source)
            diagnostics += readDiagnostics
            guard let root else { return nil }
            guard root.name == "catalog", root.namespace == CatalogXMLSourceDecoder.namespace else {
                diagnostics.append(
                    .error(
                        "root element must be <catalog xmlns=\"\(CatalogXMLSourceDecoder.namespace)\"> or <plist>", file: display,
                        at: root.position))
                return nil
            }
            return CatalogXMLSourceDecoder(reader: XMLElementReader(limits: limits)).decode(source, root: root, into: &diagnostics)
        }
        return PlistSourceDecoder(reader: PropertyListReader(limits: limits)).decode(source, into: &diagnostics)
    }

    /// Whether the first element is `<catalog` (anything else goes to the plist reader, which explains).
    private func isCatalogXML(_ source: SourceFile) -> Bool {
        var index = 0
        let bytes = source.head
        while index < bytes.count {
            guard let open = bytes[index...].firstIndex(of: UInt8(ascii: "<")), open + 1 < bytes.count else { return false }
            let next = bytes[open + 1]
            if next == UInt8(ascii: "?") || next == UInt8(ascii: "!") {
                // Declaration, DOCTYPE or comment: skip to its end.
                index = bytes[open...].firstIndex(of: UInt8(ascii: ">")).map { $0 + 1 } ?? bytes.count
                continue
            }
            return bytes[(open + 1)...].starts(with: Array("catalog".utf8))
        }
        return false
    }
}

/// Bundle identifiers name files and URL path segments, so they are checked before use.
public enum AppName {
    /// Why `name` cannot be an app's bundle identifier, or nil if it can.
    public static func problem(_ name: String) -> String? {
        let allowed = name.utf8.allSatisfy { byte in
            (byte >= 48 && byte <= 57) || (byte >= 65 && byte <= 90) || (byte >= 97 && byte <= 122)
                || byte == UInt8(ascii: ".") || byte == UInt8(ascii: "-")
        }
        // Bytes, not Foundation's substring search: servers check every request's app name.
        let utf8 = name.utf8
        let hasDoubleDot = zip(utf8, utf8.dropFirst()).contains { $0 == UInt8(ascii: ".") && $1 == UInt8(ascii: ".") }
        if name.isEmpty || !allowed || utf8.first == UInt8(ascii: ".") || utf8.first == UInt8(ascii: "-") || hasDoubleDot
            || utf8.count > 155
        {
            return "'\(name)' is not a bundle identifier; use letters, digits, '.' and '-', such as com.example.game"
        }
        return nil
    }
}
