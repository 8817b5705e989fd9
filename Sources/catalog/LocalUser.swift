import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// Who runs a command, as the audit log names them: the account's login name, else `$USER`.
enum LocalUser {
    static var name: String {
        if let entry = getpwuid(geteuid()), let login = entry.pointee.pw_name, let name = String(validatingCString: login), !name.isEmpty {
            return name
        }
        return ProcessInfo.processInfo.environment["USER"].flatMap { $0.isEmpty ? nil : $0 } ?? "unknown"
    }
}
