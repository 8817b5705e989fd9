import Content
import Foundation

/// A content item of the catalog, checked (docs/catalog-format.md, "Content"): its id, how it is
/// sold, and its files, each found on disk inside the app's content folder.
public struct CatalogContentItem: Sendable, Hashable {
    /// The item's id, unique in the app.
    public var id: String
    /// Sold with a product, or as a dated item of a subscription group (by its catalog name).
    public var availability: ContentAvailability
    /// The files, by path in the item.
    public var files: [File]
    /// Where the item is defined.
    public var location: SourceLocation

    /// One file of an item.
    public struct File: Sendable, Hashable {
        /// Its path in the item, as the manifest lists it and the client places it.
        public var path: String
        /// The file in the content folder, as validation found it.
        public var source: URL
        /// Its size when validated.
        public var size: Int64

        /// A file of `size` bytes at `source`, listed at `path`.
        public init(path: String, source: URL, size: Int64) {
            self.path = path
            self.source = source
            self.size = size
        }
    }

    /// An item `id` sold by `availability`, with `files`, defined at `location`.
    public init(id: String, availability: ContentAvailability, files: [File], location: SourceLocation) {
        self.id = id
        self.availability = availability
        self.files = files
        self.location = location
    }
}
