import Foundation

/// A password not in the URL, where libpq would look: `PGPASSWORD`, then the URL's `passfile`,
/// `PGPASSFILE` or `~/.pgpass` (lines `host:port:database:user:password`, `*` for any, `\` escaping).
enum PostgresPassword {
    static func lookUp(
        for address: StoreURL.PostgresAddress, environment: [String: String] = ProcessInfo.processInfo.environment
    ) -> String? {
        if let password = environment["PGPASSWORD"] { return password }
        let path =
            address.passfile ?? environment["PGPASSFILE"]
            ?? environment["HOME"].map { URL(fileURLWithPath: $0).appendingPathComponent(".pgpass").path }
        guard let path, let text = try? String(contentsOfFile: path, encoding: .utf8) else { return nil }
        return password(in: text, for: address)
    }

    static func password(in passfile: String, for address: StoreURL.PostgresAddress) -> String? {
        for line in passfile.split(whereSeparator: \.isNewline) where !line.hasPrefix("#") {
            let fields = self.fields(line)
            guard fields.count == 5 else { continue }
            let wanted = [address.host, String(address.port), address.database, address.user]
            if zip(fields.prefix(4), wanted).allSatisfy({ $0 == "*" || $0 == $1 }) { return fields[4] }
        }
        return nil
    }

    /// A line's fields, split at unescaped colons.
    private static func fields(_ line: Substring) -> [String] {
        var fields = [""]
        var escaped = false
        for character in line {
            if escaped {
                fields[fields.count - 1].append(character)
                escaped = false
            } else if character == "\\" {
                escaped = true
            } else if character == ":" {
                fields.append("")
            } else {
                fields[fields.count - 1].append(character)
            }
        }
        return fields
    }
}
