internal import CLibDeflate
import Foundation

/// gzip through libdeflate. Its header has no name and a zero mtime, so identical input gives
/// identical bytes and therefore an unchanged ETag.
public enum Gzip {
    /// Why compression failed (libdeflate fails only when it cannot allocate).
    public struct Failure: Error, CustomStringConvertible {
        public var description: String { "gzip compression failed" }
    }

    /// The level for a feed's gzip copy. Up to 1 MiB, level 6: feeds that apps fetch often are
    /// small, and their smallest copy matters most. Above that, level 1: on a 15 MB rich feed it
    /// is about three times as fast as level 6 for a copy about a third larger (1.6 MB instead of
    /// 1.2 MB), and compressing was most of the publishing time of a big catalog.
    public static func feedLevel(forBytes count: Int) -> Int32 {
        count <= 1 << 20 ? 6 : 1
    }

    public static func compress(_ input: some ContiguousBytes, level: Int32 = 6) throws -> [UInt8] {
        guard let compressor = libdeflate_alloc_compressor(level) else { throw Failure() }
        defer { libdeflate_free_compressor(compressor) }
        let count = input.withUnsafeBytes(\.count)
        let bound = libdeflate_gzip_compress_bound(compressor, count)
        // Left uninitialized, not zeroed: the bound is about the input's size, and the pages that
        // compression never writes then take no memory (a big feed compresses about tenfold).
        let output = [UInt8](unsafeUninitializedCapacity: bound) { destination, initialized in
            initialized = input.withUnsafeBytes { source in
                libdeflate_gzip_compress(compressor, source.baseAddress, source.count, destination.baseAddress, destination.count)
            }
        }
        guard !output.isEmpty else { throw Failure() }
        return output
    }

    /// Decompresses one gzip member; nil if the bytes are not valid gzip.
    public static func decompress(_ input: [UInt8]) -> [UInt8]? {
        guard input.count >= 18, let decompressor = libdeflate_alloc_decompressor() else { return nil }
        defer { libdeflate_free_decompressor(decompressor) }
        // The trailer holds the uncompressed size modulo 2^32.
        let size = input.suffix(4).reversed().reduce(0) { $0 << 8 | Int($1) }
        var output = [UInt8](repeating: 0, count: size)
        var actual = 0
        let status = input.withUnsafeBytes { source in
            output.withUnsafeMutableBytes { destination in
                libdeflate_gzip_decompress(
                    decompressor, source.baseAddress, source.count, destination.baseAddress, destination.count, &actual)
            }
        }
        guard status == LIBDEFLATE_SUCCESS, actual == size else { return nil }
        return output
    }
}
