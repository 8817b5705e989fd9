import ArgumentParser
import CatalogKit
import Content
import Foundation

/// `catalog content`: what an app's revisions deliver as purchased content (docs/content.md).
struct ContentCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "content",
        abstract: "Purchased content: what an app's revisions deliver, and a customer's signed URLs for support.",
        subcommands: [ContentListCommand.self, ContentURLCommand.self]
    )
}

/// `catalog content ls APP [--revision N] [--json]`.
struct ContentListCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "ls",
        abstract: "List the content items of an app's current (or given) revision.",
        discussion: """
            For each item: its id, how it is sold (a product, or a subscription group's item with \
            its publication date), its version, and its files with their sizes and SHA-256 digests, \
            as the revision's content manifest holds them. Exit status: 0 on success, 1 for an \
            unknown app or revision or an unreadable manifest, 64 on misuse.
            """
    )

    @OptionGroup var config: ConfigOptions
    @OptionGroup var options: CatalogOptions

    @Argument(help: "The app's bundle identifier.")
    var app: String

    @Option(help: "The revision to list. Default: the current one.")
    var revision: Int?

    @Flag(help: "Print JSON instead of text.")
    var json = false

    func validate() throws {
        if let problem = AppName.problem(app) { throw ValidationError(problem) }
        if let revision, revision < 1 { throw ValidationError("--revision must be 1 or more") }
    }

    func run() async throws {
        let workflow = try options.workflow(config.settings())
        let (revision, manifest) = try await exitOnFailure { try workflow.content(app: app, revision: self.revision) }
        let items = manifest?.items ?? []
        if json {
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
            encoder.dateEncodingStrategy = .iso8601
            print(String(decoding: try encoder.encode(Listing(app: app, revision: revision, items: items)), as: UTF8.self))
            return
        }
        print(Self.text(app: app, revision: revision, items: items), terminator: "")
    }

    /// The JSON form: the app, the revision listed, and the manifest's items as it holds them.
    struct Listing: Encodable {
        var app: String
        var revision: Int
        var items: [ContentManifest.Item]
    }

    /// One block per item: a heading line (id, how it is sold, version), then one line per file.
    static func text(app: String, revision: Int, items: [ContentManifest.Item]) -> String {
        guard !items.isEmpty else { return "\(app) revision \(revision): no content\n" }
        var lines = ["\(app) revision \(revision): \(items.count) item\(items.count == 1 ? "" : "s")"]
        for item in items {
            let sold =
                switch item.availability {
                case .product(let product): "product \(product)"
                case .subscriptionGroup(let group, let published):
                    "group \(group), published \(published.formatted(.iso8601))"
                case nil: "unsold"
                }
            let bytes = item.files.reduce(Int64(0)) { $0 + $1.size }
            lines.append(
                "\(item.id)  \(sold)  version \(item.version)  \(item.files.count) file\(item.files.count == 1 ? "" : "s"), \(bytes) bytes")
            for file in item.files { lines.append("  \(file.path)  \(file.size) bytes  sha256 \(file.sha256.hex)") }
        }
        return lines.joined(separator: "\n") + "\n"
    }
}
