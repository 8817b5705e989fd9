/// Failures of the catalog tooling that are not diagnostics about a source file.
public enum CatalogError: Error, CustomStringConvertible {
    /// A file that ships with the tool, such as `catalog.xsd`, is missing.
    case missingResource(String)
    /// Reading or writing `path` failed; `message` says how.
    case io(path: String, message: String)
    /// What is published at `path` cannot be read or does not match its manifest.
    case corruptPublication(path: String, message: String)

    public var description: String {
        switch self {
        case .missingResource(let name): "resource \(name) is missing from the installation"
        case .io(let path, let message): "\(path): \(message)"
        case .corruptPublication(let path, let message): "\(path): published data is unreadable: \(message)"
        }
    }
}
