// swift-tools-version: 6.0
// Reference point for scripts/bench-serve: the least a server on SwiftNIO does for a feed
// request, the limit for a server built on the same event loops as `catalog serve`.
import PackageDescription

let package = Package(
    name: "nio-floor",
    dependencies: [.package(url: "https://github.com/apple/swift-nio", from: "2.101.2")],
    targets: [
        .executableTarget(
            name: "nio-floor",
            dependencies: [.product(name: "NIOCore", package: "swift-nio"), .product(name: "NIOPosix", package: "swift-nio")])
    ]
)
