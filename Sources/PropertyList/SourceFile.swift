import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// One source file to read: bytes in memory, or a file on disk that the reader streams with a
/// size cap, so a 60 MB catalog is never held in memory whole.
///
/// Either way the reader, not libxml2, does the reading: libxml2 opening a file itself would
/// silently un-gzip it and read any size. Formats that must never reach the XML parser
/// (gzip, binary plists, UTF-16, other declared encodings) are recognised from the first bytes.
public struct SourceFile: Sendable {
    /// The path as it appears in diagnostics.
    public let path: String
    let storage: Storage
    /// The first bytes (up to 512), for recognising the format.
    public let head: [UInt8]

    enum Storage: Sendable {
        case bytes([UInt8])
        case file(URL, maximumBytes: Int)
    }

    public init(path: String, bytes: [UInt8]) {
        self.path = path
        storage = .bytes(bytes)
        head = Array(bytes.prefix(Self.headLength))
    }

    static let headLength = 512

    /// Opens `url` for streaming, refusing files over `limits.maximumFileBytes`.
    public static func read(
        _ url: URL, displayPath: String, limits: ReaderLimits = ReaderLimits()
    ) -> Result<SourceFile, Diagnostic> {
        func failure(_ message: String) -> Result<SourceFile, Diagnostic> {
            .failure(.error(message, file: displayPath, at: .startOfFile))
        }
        let descriptor = open(url.path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { return failure("cannot open file: \(String(cString: strerror(errno)))") }
        defer { close(descriptor) }
        var info = stat()
        guard fstat(descriptor, &info) == 0, (info.st_mode & S_IFMT) == S_IFREG else {
            return failure("not a regular file")
        }
        if Int(info.st_size) > limits.maximumFileBytes {
            return failure("file is larger than the \(limits.maximumFileBytes >> 20) MiB limit")
        }
        var head = [UInt8](repeating: 0, count: headLength)
        let count = head.withUnsafeMutableBytes { Glibc.read(descriptor, $0.baseAddress, headLength) }
        guard count >= 0 else { return failure("cannot read file: \(String(cString: strerror(errno)))") }
        head.removeLast(headLength - count)
        return .success(SourceFile(path: displayPath, storage: .file(url, maximumBytes: limits.maximumFileBytes), head: head))
    }

    private init(path: String, storage: Storage, head: [UInt8]) {
        self.path = path
        self.storage = storage
        self.head = head
    }

    /// All the bytes, for the few consumers that need a whole document (XSD validation).
    public func contents() throws(Diagnostic) -> [UInt8] {
        switch storage {
        case .bytes(let bytes):
            return bytes
        case .file(let url, let maximumBytes):
            guard let handle = FileHandle(forReadingAtPath: url.path),
                let data = try? handle.read(upToCount: maximumBytes + 1)
            else { throw .error("cannot read file", file: path, at: .startOfFile) }
            try? handle.close()
            guard data.count <= maximumBytes else {
                throw .error("file is larger than the \(maximumBytes >> 20) MiB limit", file: path, at: .startOfFile)
            }
            return [UInt8](data)
        }
    }

    /// A diagnostic if these bytes are in a form that is not UTF-8 XML text, else nil.
    public func formatProblem() -> Diagnostic? {
        func problem(_ message: String) -> Diagnostic {
            .error(message, file: path, at: .startOfFile)
        }
        if head.isEmpty { return problem("file is empty") }
        if head.starts(with: [0x1F, 0x8B]) {
            return problem("file is gzip-compressed; decompress it (gunzip) and keep the plain XML in the catalog")
        }
        if head.starts(with: Array("bplist".utf8)) {
            return problem(
                "binary property list is not supported; convert it to XML with "
                    + "'plutil -convert xml1 \(path)' (macOS) or 'plistutil -i IN -o OUT -f xml' (libplist-utils)")
        }
        if head.starts(with: [0xFE, 0xFF]) || head.starts(with: [0xFF, 0xFE]) || (head.count > 1 && head[1] == 0) {
            return problem("file is UTF-16; save it as UTF-8")
        }
        if let declared = declaredEncoding(), declared.lowercased() != "utf-8", declared.lowercased() != "utf8" {
            return problem("encoding '\(declared)' is not supported; save the file as UTF-8")
        }
        return nil
    }

    /// The `encoding="…"` of the XML declaration, if there is one.
    private func declaredEncoding() -> String? {
        guard head.starts(with: Array("<?xml".utf8)), let end = findSequence(Array("?>".utf8), in: head[...]) else {
            return nil
        }
        let declaration = String(decoding: head[..<end], as: UTF8.self)
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
