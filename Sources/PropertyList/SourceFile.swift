import Foundation

/// The bytes of one source file, read with a size cap and checked for the
/// formats that must never reach the XML parser (gzip, binary plists, UTF-16).
///
/// libxml2 opening a file itself would silently un-gzip it and read any size; reading
/// the bytes here and handing the parser memory keeps both under our control.
public struct SourceFile: Sendable {
    /// The path as it appears in diagnostics.
    public let path: String
    public let bytes: [UInt8]

    public init(path: String, bytes: [UInt8]) {
        self.path = path
        self.bytes = bytes
    }

    /// Reads `url` with at most `limits.maximumFileBytes` bytes, or explains why not.
    public static func read(
        _ url: URL, displayPath: String, limits: ReaderLimits = ReaderLimits()
    ) -> Result<SourceFile, Diagnostic> {
        func failure(_ message: String) -> Result<SourceFile, Diagnostic> {
            .failure(.error(message, file: displayPath, at: .startOfFile))
        }
        guard let handle = FileHandle(forReadingAtPath: url.path) else {
            return failure("cannot open file")
        }
        defer { try? handle.close() }
        do {
            // Read one byte past the cap so that an oversized file is detected without reading it all.
            let data = try handle.read(upToCount: limits.maximumFileBytes + 1) ?? Data()
            if data.count > limits.maximumFileBytes {
                return failure("file is larger than the \(limits.maximumFileBytes >> 20) MiB limit")
            }
            return .success(SourceFile(path: displayPath, bytes: [UInt8](data)))
        } catch {
            return failure("cannot read file: \(error.localizedDescription)")
        }
    }

    /// A diagnostic if these bytes are in a form that is not UTF-8 XML text, else nil.
    public func formatProblem() -> Diagnostic? {
        func problem(_ message: String) -> Diagnostic {
            .error(message, file: path, at: .startOfFile)
        }
        if bytes.isEmpty { return problem("file is empty") }
        if bytes.starts(with: [0x1F, 0x8B]) {
            return problem("file is gzip-compressed; decompress it (gunzip) and keep the plain XML in the catalog")
        }
        if bytes.starts(with: Array("bplist".utf8)) {
            return problem(
                "binary property list is not supported; convert it to XML with "
                    + "'plutil -convert xml1 \(path)' (macOS) or 'plistutil -i IN -o OUT -f xml' (libplist-utils)")
        }
        if bytes.starts(with: [0xFE, 0xFF]) || bytes.starts(with: [0xFF, 0xFE]) || (bytes.count > 1 && bytes[1] == 0) {
            return problem("file is UTF-16; save it as UTF-8")
        }
        if let declared = declaredEncoding(), declared.lowercased() != "utf-8", declared.lowercased() != "utf8" {
            return problem("encoding '\(declared)' is not supported; save the file as UTF-8")
        }
        return nil
    }

    /// The `encoding="…"` of the XML declaration, if there is one.
    private func declaredEncoding() -> String? {
        let head = bytes.prefix(256)
        guard head.starts(with: Array("<?xml".utf8)), let end = findSequence(Array("?>".utf8), in: head)
        else { return nil }
        let declaration = String(decoding: head[head.startIndex..<end], as: UTF8.self)
        guard let range = declaration.range(of: "encoding") else { return nil }
        let rest = declaration[range.upperBound...].drop { $0 == " " || $0 == "=" || $0 == "\t" }
        guard let quote = rest.first, quote == "\"" || quote == "'" else { return nil }
        return String(rest.dropFirst().prefix { $0 != quote })
    }
}

private func findSequence(_ needle: [UInt8], in haystack: ArraySlice<UInt8>) -> Int? {
    guard haystack.count >= needle.count else { return nil }
    var index = haystack.startIndex
    while index + needle.count <= haystack.endIndex {
        if haystack[index..<index + needle.count].elementsEqual(needle) { return index }
        index += 1
    }
    return nil
}
