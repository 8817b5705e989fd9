/// Failures of the catalog tooling that are not diagnostics about a source file.
public enum CatalogError: Error, CustomStringConvertible {
    case missingResource(String)
    case io(path: String, message: String)
    case corruptPublication(path: String, message: String)

    public var description: String {
        switch self {
        case .missingResource(let name): "resource \(name) is missing from the installation"
        case .io(let path, let message): "\(path): \(message)"
        case .corruptPublication(let path, let message): "\(path): published data is unreadable: \(message)"
        }
    }
}
