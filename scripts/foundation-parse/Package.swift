// swift-tools-version: 6.0
// Reference point for scripts/bench-build: parses a catalog plist with
// Foundation's PropertyListSerialization and nothing else.
import PackageDescription

let package = Package(
    name: "foundation-parse",
    targets: [
        .executableTarget(name: "foundation-parse")
    ]
)
