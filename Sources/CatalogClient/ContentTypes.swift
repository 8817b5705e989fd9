import Foundation

/// An item the customer may download, as `POST /v1/apps/{app}/content` answers it: its version and
/// its files, each with its size, SHA-256 and a short-lived signed URL.
///
/// ``ContentDownloadManager/available()`` asks for the list; pass an item to
/// ``ContentDownloadManager/download(_:)``.
public struct DownloadableContent: Sendable, Hashable {
    /// The item's id in the catalog (a level pack, a magazine's issue).
    public var item: String
    /// The item's version: it grows each time the item's files change.
    public var version: Int
    /// The item's files, by path.
    public var files: [File]

    /// One file of an item and where to fetch it.
    public struct File: Sendable, Hashable {
        /// Its path inside the item's folder, `/`-separated.
        public var path: String
        /// Its size in bytes.
        public var size: Int64
        /// The SHA-256 of its bytes, 64 lower-case hexadecimal digits: checked before the file is
        /// handed over.
        public var sha256: String
        /// The signed URL, resolved against the server; it stops working at ``expires``.
        public var url: URL
        /// When the signed URL expires. The manager asks for the list again for a fresh one.
        public var expires: Date

        /// A file as the server lists it.
        public init(path: String, size: Int64, sha256: String, url: URL, expires: Date) {
            self.path = path
            self.size = size
            self.sha256 = sha256
            self.url = url
            self.expires = expires
        }
    }

    /// An item as the server lists it.
    public init(item: String, version: Int, files: [File]) {
        self.item = item
        self.version = version
        self.files = files
    }

    /// The bytes of all its files.
    public var size: Int64 { files.reduce(0) { $0 + $1.size } }
}

/// What the server is shown to prove what the customer bought, when the download manager asks for
/// the list.
public struct ContentEvidence: Sendable, Hashable {
    enum Kind: Sendable, Hashable {
        case lastAcceptedPurchase
        case body(Data)
    }

    let kind: Kind

    /// The last purchase the server accepted on this install for each customer it answered, as
    /// ``CatalogClient/refreshEntitlements()`` presents them again: the default. A purchase sent
    /// (``CatalogClient/sendPurchase(signedTransaction:appTransaction:appAccountToken:)``) or,
    /// on a fresh install or a second device, those a restore presented
    /// (``CatalogClient/restorePurchases(from:syncing:appAccountToken:)``).
    public static let lastAcceptedPurchase = ContentEvidence(kind: .lastAcceptedPurchase)

    /// A signed transaction (StoreKit 2's `jwsRepresentation`), with the app's signed
    /// AppTransaction and the customer's account token when the app has them: the body
    /// `POST …/purchases` takes.
    public static func transaction(signedTransaction: String, appTransaction: String? = nil, appAccountToken: UUID? = nil)
        -> ContentEvidence
    {
        let wire = PurchaseOutbox.WirePurchase(
            signedTransaction: signedTransaction, signedAppTransaction: appTransaction,
            appAccountToken: appAccountToken?.uuidString.lowercased())
        return ContentEvidence(kind: .body((try? JSONEncoder().encode(wire)) ?? Data()))
    }
}

/// Where downloaded content is kept.
public enum ContentLocation: Sendable, Hashable {
    /// `content/` in ``CatalogClient/Configuration/cacheDirectory``, left out of backups: the
    /// default, as Apple's guide asks for content that can be downloaded again. The system may
    /// purge it when space runs low; ``ContentDownloadManager/downloaded()`` then no longer lists
    /// what was removed, and it is downloaded again.
    case caches
    /// `content/` in ``CatalogClient/Configuration/dataDirectory`` (Application Support), which the
    /// system never purges; left out of backups unless `backedUp`.
    case applicationSupport(backedUp: Bool = false)
    /// A folder of the app's choosing.
    case directory(URL, backedUp: Bool)
}

/// The states of a download, as StoreKit's `SKDownload` had them.
public enum ContentDownloadState: Sendable, Hashable {
    /// Queued: it starts when fewer than ``ContentDownloadManager/maximumConcurrentDownloads`` run.
    case waiting
    /// Bytes are being received.
    case active
    /// Stopped by ``ContentDownloadManager/pause(_:)``; the bytes received so far are kept.
    case paused
    /// Every file is on disk and matched its SHA-256: ``ContentDownloadStatus/location`` holds it.
    case finished
    /// Stopped by an error (``ContentDownloadStatus/error``); the bytes received so far are kept,
    /// unless they did not match their digest.
    case failed
    /// Stopped by ``ContentDownloadManager/cancel(_:)``; its partial files were removed.
    case cancelled
}

/// Where a download stands.
public struct ContentDownloadStatus: Sendable, Hashable {
    /// The item's id.
    public var item: String
    /// The version being downloaded.
    public var version: Int
    /// The download's state.
    public var state: ContentDownloadState
    /// Bytes on disk so far, verified files and partial ones.
    public var bytesWritten: Int64
    /// Bytes of all the item's files.
    public var bytesExpected: Int64
    /// Seconds left at the rate of this session of the download; nil until there is a rate.
    public var estimatedTimeRemaining: TimeInterval?
    /// Why the download failed, when it did.
    public var error: CatalogClientError?
    /// The folder holding the item's files, once finished.
    public var location: URL?

    /// ``bytesWritten`` over ``bytesExpected``, from 0 to 1 (1 for an item of no bytes).
    public var fractionCompleted: Double {
        bytesExpected > 0 ? min(Double(bytesWritten) / Double(bytesExpected), 1) : (state == .finished ? 1 : 0)
    }

    /// Whether the download has stopped for good (finished, failed or cancelled).
    public var isDone: Bool { [.finished, .failed, .cancelled].contains(state) }
}

/// An item whose files are all on disk and verified.
public struct DownloadedContent: Sendable, Hashable, Codable {
    /// The item's id.
    public var item: String
    /// The version on disk.
    public var version: Int
    /// The folder holding its files at their paths.
    public var location: URL
    /// Its files' paths, sizes and digests.
    public var files: [File]

    /// A file on disk.
    public struct File: Sendable, Hashable, Codable {
        /// Its path inside ``DownloadedContent/location``.
        public var path: String
        /// Its size in bytes.
        public var size: Int64
        /// Its SHA-256, 64 lower-case hexadecimal digits.
        public var sha256: String
    }
}

/// What is downloaded compared with what the server lists now.
public struct ContentInventoryEntry: Sendable, Hashable {
    /// The item's id.
    public var item: String
    /// The version on disk; nil when the item is not downloaded.
    public var downloadedVersion: Int?
    /// The version the server lists; nil when the customer may no longer download the item (a
    /// refund, a subscription that lapsed before it was published), though a copy may be on disk.
    public var availableVersion: Int?
    /// The folder holding the downloaded version.
    public var location: URL?

    /// Whether the server lists a newer version than the one on disk.
    public var newerVersionAvailable: Bool {
        guard let downloadedVersion, let availableVersion else { return false }
        return availableVersion > downloadedVersion
    }
}
