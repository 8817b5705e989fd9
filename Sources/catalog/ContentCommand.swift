import ArgumentParser

/// `catalog content`: purchased content (docs/content.md).
struct ContentCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "content",
        abstract: "Purchased content: sign a customer's URLs for support.",
        subcommands: [ContentURLCommand.self]
    )
}
