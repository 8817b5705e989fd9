// swift-tools-version: 6.1
import PackageDescription

let package = Package(
    name: "iap-catalog",
    // iOS, tvOS, watchOS and visionOS for CatalogClient alone: the floor StoreKit 2 needs.
    platforms: [.macOS(.v15), .iOS(.v15), .tvOS(.v15), .watchOS(.v8), .visionOS(.v1)],
    products: [
        .executable(name: "catalog", targets: ["catalog"]),
        .library(name: "CatalogKit", targets: ["CatalogKit"]),
        .library(name: "CatalogClient", targets: ["CatalogClient"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-crypto", from: "3.12.3"),
        // Verifying the App Store's signed AppTransactions (x5c chains) that reports may carry.
        .package(url: "https://github.com/apple/swift-certificates", from: "1.21.1"),
        .package(url: "https://github.com/apple/swift-asn1", from: "1.7.4"),
        .package(url: "https://github.com/hummingbird-project/hummingbird", from: "2.28.1"),
        .package(url: "https://github.com/apple/swift-configuration", from: "1.4.0"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle", from: "2.13.0"),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-http-types", from: "1.8.0"),
        .package(url: "https://github.com/apple/swift-nio", from: "2.101.2"),
        .package(url: "https://github.com/apple/swift-nio-extras", from: "1.35.2"),
        // TLS and HTTP/2 on the lean path, which the server names itself (Hummingbird brings them too).
        .package(url: "https://github.com/apple/swift-nio-ssl", from: "2.37.6"),
        .package(url: "https://github.com/apple/swift-nio-http2", from: "1.46.0"),
        .package(url: "https://github.com/apple/swift-metrics", from: "2.13.0"),
        .package(url: "https://github.com/swift-server/swift-prometheus", from: "2.4.1"),
        .package(url: "https://github.com/vapor/postgres-nio", from: "1.33.2"),
        // Calls to the App Store Server API (Hummingbird's tests already bring it).
        .package(url: "https://github.com/swift-server/async-http-client", from: "1.37.0"),
        // `swift package generate-documentation`: the DocC catalogs of CatalogClient and CatalogKit.
        .package(url: "https://github.com/swiftlang/swift-docc-plugin", from: "1.5.0"),
        // Tests only: reading the OpenAPI document to check the server against it.
        .package(url: "https://github.com/jpsim/Yams", from: "6.2.2"),
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
        .systemLibrary(
            name: "CISAL",
            pkgConfig: "libisal",
            providers: [.apt(["libisal-dev"]), .brew(["isa-l"])]
        ),
        // Process-wide allocator setting, applied by the executable only.
        .systemLibrary(name: "CMallocTuning"),
        // The O_DIRECT open flag, for writing big feeds without the page cache.
        .systemLibrary(name: "CDirectIO"),
        .systemLibrary(
            name: "CSQLite",
            pkgConfig: "sqlite3",
            providers: [.apt(["libsqlite3-dev"]), .brew(["sqlite"])]
        ),
        // Moments in UTC to the second (plist and HTTP dates, manifests, stores): a leaf, so that a
        // module needing a date does not import the plist parser for it.
        .target(name: "Time"),
        .target(name: "PropertyList", dependencies: ["CLibXML2", "Time"]),
        // HTTP's own rules, with no NIO and no domain: dates (RFC 9110 §5.6.7), conditional requests
        // and If-Match (§13), Accept-Encoding (§12.5.3). The server decides responses with them; the
        // domain needs none of it (a feed's Last-Modified is formatted by Time's `imfFixdate`).
        .target(name: "HTTPSemantics", dependencies: ["Time"]),
        // Feed signatures (detached JWS, EdDSA): made by CatalogKit, checked by CatalogClient. Apple
        // platforms have CryptoKit; elsewhere swift-crypto provides the same API.
        .target(
            name: "FeedSigning",
            dependencies: [
                .product(name: "Crypto", package: "swift-crypto", condition: .when(platforms: [.linux, .android, .windows, .wasi]))
            ]
        ),
        .target(
            name: "CatalogKit",
            dependencies: [
                "Time", "PropertyList", "FeedSigning", "CLibDeflate", "CISAL", "CDirectIO",
                // `catalog build` puts content into the blob store and writes each revision's manifest;
                // a publication names its manifests' blobs, which a shared store records (docs/content.md).
                "Content",
                .product(name: "Crypto", package: "swift-crypto"),
            ],
            resources: [.copy("Resources/catalog.xsd")]
        ),
        // Where the server keeps everything (reports, editors and the audit log, publications,
        // purchases, webhooks, content blobs): SQLite by default, PostgreSQL to scale out. It stores
        // the ledger's rows and knows no store's evidence.
        .target(
            name: "Storage",
            dependencies: [
                "CatalogKit", "Ledger", "Time", "CSQLite", "CISAL",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "PostgresNIO", package: "postgres-nio"),
            ]
        ),
        .target(
            name: "CatalogServer",
            dependencies: [
                // The domain's store protocols only: the executable opens the stores (Storage).
                "CatalogKit", "Time", "HTTPSemantics", "AppStore", "AppStoreServerAPI", "OutboundAPI", "Content", "Ledger", "FeedSigning",
                "PropertyList", "GooglePlay", "PlayDeveloperAPI",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdCore", package: "hummingbird"),
                .product(name: "HummingbirdHTTP2", package: "hummingbird"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOTLS", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "NIOHTTP2", package: "swift-nio-http2"),
                .product(name: "NIOHTTPTypes", package: "swift-nio-extras"),
                .product(name: "NIOHTTPTypesHTTP1", package: "swift-nio-extras"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "CoreMetrics", package: "swift-metrics"),
                .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "X509", package: "swift-certificates"),
                .product(name: "SwiftASN1", package: "swift-asn1"),
                .product(name: "Crypto", package: "swift-crypto"),
            ],
            // The dashboard is copied as a folder: Bundle.module finds its files under editor/.
            resources: [.copy("Resources/openapi.yaml"), .copy("Resources/editor")]
        ),
        // The ledger, the same for every store (docs/purchases.md, "The ledger"): purchases, periods,
        // credits and entitlements; customers and their keys; the record loop and its binding rules
        // over the primitives each database implements; webhook events. Foundation, and swift-crypto
        // for the webhook's HMAC and event ids only: no store's evidence, no NIO, no database.
        .target(
            name: "Ledger",
            dependencies: [.product(name: "Crypto", package: "swift-crypto")]
        ),
        // The App Store, the ledger's first store: its evidence verified offline (StoreKit 2 JWS,
        // notifications, legacy receipts), Apple's models, and the mapping into the ledger's terms.
        // No NIO, no HTTP, no database (docs/purchases.md).
        // ES256 checks for a key that signs again and again (docs/purchases.md, "Signatures with a key
        // seen before"): a table of the key's multiples, evaluated with BoringSSL's own P-256
        // arithmetic, which the Crypto product links.
        .target(name: "CP256FixedKey"),
        .target(
            name: "AppStore",
            dependencies: [
                "Ledger", "CatalogKit", "FeedSigning", "CP256FixedKey",
                .product(name: "X509", package: "swift-certificates"),
                .product(name: "SwiftASN1", package: "swift-asn1"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "_CryptoExtras", package: "swift-crypto"),
            ]
        ),
        // The App Store Server API, for what offline evidence cannot know (docs/app-store-api.md): its
        // client (ES256 tokens, retries, Apple's errors), and reconciliation and import through the
        // App Store adapter. What Apple signs is verified by AppStore's verifier like any evidence.
        .target(
            name: "AppStoreServerAPI",
            dependencies: [
                "AppStore", "CatalogKit", "Ledger", "FeedSigning", "HTTPSemantics", "Time", "OutboundAPI",
                .product(name: "Crypto", package: "swift-crypto"),
            ]
        ),
        // The Google Play Developer API (docs/google-play.md): a service account's OAuth tokens, the
        // purchases' state now, acknowledgement and consumption, voided purchases; on OutboundAPI.
        .target(
            name: "PlayDeveloperAPI",
            dependencies: [
                "GooglePlay", "OutboundAPI", "FeedSigning", "Ledger",
                .product(name: "_CryptoExtras", package: "swift-crypto"),
            ]
        ),
        // What every store's API client shares: HTTP by AsyncHTTPClient, each attempt bounded and
        // observed, retries with back-off and `Retry-After`. What an answer means is each store's.
        .target(
            name: "OutboundAPI",
            dependencies: [
                "HTTPSemantics", "Time",
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
            ]
        ),
        // Google Play, the ledger's second store (docs/google-play.md): its evidence verified offline
        // (purchases signed by the app's licence key, Pub/Sub push tokens). No NIO, no HTTP, no database.
        .target(
            name: "GooglePlay",
            dependencies: [
                "Ledger", "CatalogKit", "FeedSigning",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "_CryptoExtras", package: "swift-crypto"),
            ]
        ),
        // Purchased content, the parts that need no server: who may download what, signed URLs, byte
        // ranges, and the content-addressed blob store with its manifests (docs/content.md). Foundation,
        // swift-crypto and the ledger's types; no store's evidence, no NIO, no HTTP, no database.
        .target(
            name: "Content",
            dependencies: ["Ledger", "FeedSigning", "CDirectIO", .product(name: "Crypto", package: "swift-crypto")]
        ),
        // What an app links: Foundation and FeedSigning only (CryptoKit, or swift-crypto off Apple
        // platforms), so that it builds for every Apple platform and Linux.
        .target(
            name: "CatalogClient",
            dependencies: [
                // SHA-256 of downloaded content: CryptoKit on Apple platforms, as FeedSigning.
                "FeedSigning",
                .product(name: "Crypto", package: "swift-crypto", condition: .when(platforms: [.linux, .android, .windows, .wasi])),
            ]
        ),
        .executableTarget(
            name: "catalog",
            dependencies: [
                "CatalogKit", "CatalogServer", "Storage", "CatalogClient", "FeedSigning", "CMallocTuning", "AppStore", "Time",
                "Content", "Ledger", "PropertyList", "AppStoreServerAPI", "OutboundAPI", "GooglePlay",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "NIOCore", package: "swift-nio"), .product(name: "NIOPosix", package: "swift-nio"),
                // `catalog purchases sign`: ES256 and the certificate it puts in x5c.
                .product(name: "Crypto", package: "swift-crypto"), .product(name: "X509", package: "swift-certificates"),
                .product(name: "SwiftASN1", package: "swift-asn1"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Configuration", package: "swift-configuration"),
            ]
        ),
        .testTarget(name: "TimeTests", dependencies: ["Time"]),
        .testTarget(name: "HTTPSemanticsTests", dependencies: ["HTTPSemantics", "CatalogTestSupport", "Time"]),
        .testTarget(name: "PropertyListTests", dependencies: ["PropertyList"]),
        // Tables shared by the domain tests and the tests that send them through HTTP.
        .target(name: "CatalogTestSupport", dependencies: ["CatalogKit", "Time", "HTTPSemantics"], path: "Tests/CatalogTestSupport"),
        .testTarget(
            name: "CatalogKitTests",
            dependencies: [
                "CatalogKit", "FeedSigning", "CatalogTestSupport", "Storage", "Time", "HTTPSemantics", "Content", "PropertyList",
                .product(name: "Logging", package: "swift-log"),
            ],
            // Golden feeds and their source, read at run time from beside PublishingTests.swift.
            exclude: ["Fixtures"]
        ),
        .testTarget(
            name: "CatalogServerTests",
            dependencies: [
                "CatalogServer", "CatalogKit", "FeedSigning", "CatalogTestSupport", "Storage", "Time", "HTTPSemantics", "AppStore",
                "AppStoreTestSupport", "Content", "Ledger", "PropertyList", "AppStoreAPIStandIn", "PlayAPIStandIn", "GooglePlay",
                .product(name: "_CryptoExtras", package: "swift-crypto"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdTesting", package: "hummingbird"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOTLS", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "NIOHTTPTypes", package: "swift-nio-extras"),
                .product(name: "NIOEmbedded", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "Yams", package: "Yams"),
                .product(name: "X509", package: "swift-certificates"),
                .product(name: "SwiftASN1", package: "swift-asn1"),
                .product(name: "Crypto", package: "swift-crypto"),
            ]
        ),
        .testTarget(
            name: "StorageTests",
            dependencies: [
                "Storage", "CatalogKit", "CatalogTestSupport", "Time", "Ledger", "AppStore", "AppStoreTestSupport",
                // The server's GroupCommitter, driven here against each store (a stalled one too).
                "CatalogServer",
                .product(name: "Logging", package: "swift-log"),
            ],
            // Rows an older version wrote, read at run time from beside the migration tests.
            exclude: ["Fixtures"]
        ),
        .testTarget(
            name: "CatalogClientTests",
            dependencies: [
                "CatalogClient", "CatalogServer", "CatalogKit", "CatalogTestSupport", "Storage", "Time", "AppStore",
                "AppStoreTestSupport", "Content", "Ledger",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdTesting", package: "hummingbird"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        // A stand-in for Apple's PKI and signers of JWS and PKCS#7 receipts, shared by the App Store, store and command tests.
        .target(
            name: "AppStoreTestSupport",
            dependencies: [
                "AppStore", "Ledger", "CatalogTestSupport",
                .product(name: "X509", package: "swift-certificates"),
                .product(name: "SwiftASN1", package: "swift-asn1"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "_CryptoExtras", package: "swift-crypto"),
            ],
            path: "Tests/AppStoreTestSupport"
        ),
        .testTarget(
            name: "AppStoreTests",
            dependencies: [
                "AppStore", "AppStoreTestSupport", "CatalogKit", "CatalogTestSupport", "FeedSigning", "Ledger",
                .product(name: "X509", package: "swift-certificates"),
                .product(name: "SwiftASN1", package: "swift-asn1"),
                .product(name: "Crypto", package: "swift-crypto"),
            ],
            // Wycheproof's ES256 vectors, for the fixed-key checks (FixedKeyVerifierTests).
            resources: [.copy("Resources/wycheproof-ecdsa-p256-sha256-p1363.json")]
        ),
        // A stand-in for Apple's App Store Server API on loopback, following Apple's documentation:
        // its token checks, paging, errors and throttling (docs/app-store-api.md, "Tested here").
        .target(
            name: "AppStoreAPIStandIn",
            dependencies: [
                "AppStoreTestSupport", "FeedSigning", "LoopbackServer",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "NIOCore", package: "swift-nio"),
            ],
            path: "Tests/AppStoreAPIStandIn"
        ),
        .testTarget(
            name: "AppStoreServerAPITests",
            dependencies: [
                "AppStoreServerAPI", "AppStoreAPIStandIn", "AppStoreTestSupport", "AppStore", "Ledger", "Storage", "CatalogKit",
                "CatalogTestSupport", "OutboundAPI",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        // The loopback server both stand-ins run on.
        .target(
            name: "LoopbackServer",
            dependencies: [
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
            ],
            path: "Tests/LoopbackServer"
        ),
        // A stand-in of Google's token endpoint and the Play Developer API on loopback.
        .target(
            name: "PlayAPIStandIn",
            dependencies: [
                "FeedSigning", "LoopbackServer",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "_CryptoExtras", package: "swift-crypto"),
                .product(name: "NIOCore", package: "swift-nio"),
            ],
            path: "Tests/PlayAPIStandIn"
        ),
        .testTarget(
            name: "PlayDeveloperAPITests",
            dependencies: [
                "PlayDeveloperAPI", "PlayAPIStandIn", "GooglePlay", "OutboundAPI", "Ledger", "CatalogKit", "Storage", "CatalogTestSupport",
                .product(name: "_CryptoExtras", package: "swift-crypto"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        .testTarget(
            name: "GooglePlayTests",
            dependencies: [
                "GooglePlay", "CatalogKit", "FeedSigning", "Ledger",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "_CryptoExtras", package: "swift-crypto"),
            ]
        ),
        .testTarget(name: "LedgerTests", dependencies: ["Ledger"]),
        .testTarget(name: "ContentTests", dependencies: ["Content", "Ledger"]),
        .testTarget(
            name: "catalogTests",
            dependencies: [
                "catalog", "CatalogKit", "CatalogTestSupport", "Storage", "AppStore", "AppStoreTestSupport", "Time",
                "HTTPSemantics", "Content", "CatalogClient", "Ledger", "AppStoreAPIStandIn", "FeedSigning",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "_CryptoExtras", package: "swift-crypto"),
            ]
        ),
    ],
    swiftLanguageModes: [.v6]
)
