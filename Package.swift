// swift-tools-version: 6.1
import PackageDescription

let package = Package(
    name: "iap-catalog",
    platforms: [.macOS(.v14)],
    products: [
        .executable(name: "catalog", targets: ["catalog"]),
        .library(name: "CatalogKit", targets: ["CatalogKit"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-crypto", from: "3.12.3"),
    ],
    targets: [
        // The only target that sees libxml2; everything else goes through PropertyList.
        .systemLibrary(
            name: "CLibXML2",
            pkgConfig: "libxml-2.0",
            providers: [.apt(["libxml2-dev"]), .brew(["libxml2"])]
        ),
        .systemLibrary(
            name: "CLibDeflate",
            pkgConfig: "libdeflate",
            providers: [.apt(["libdeflate-dev"]), .brew(["libdeflate"])]
        ),
        // Process-wide allocator setting, applied by the executable only.
        .systemLibrary(name: "CMallocTuning"),
        .target(name: "PropertyList", dependencies: ["CLibXML2"]),
        .target(
            name: "CatalogKit",
            dependencies: [
                "PropertyList", "CLibDeflate",
                .product(name: "Crypto", package: "swift-crypto"),
            ],
            resources: [.copy("Resources/catalog.xsd")]
        ),
        .executableTarget(
            name: "catalog",
            dependencies: [
                "CatalogKit", "CMallocTuning",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ]
        ),
        .testTarget(name: "PropertyListTests", dependencies: ["PropertyList"]),
        .testTarget(name: "CatalogKitTests", dependencies: ["CatalogKit"]),
        .testTarget(
            name: "catalogTests",
            dependencies: ["catalog", "CatalogKit"]
        ),
    ],
    swiftLanguageModes: [.v6]
)
