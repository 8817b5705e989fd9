internal import CISAL
internal import CLibDeflate
import Foundation

/// gzip through libdeflate or ISA-L. The header has no name and a zero mtime, so identical
/// input gives identical bytes and therefore an unchanged ETag.
public enum Gzip {
    /// Why compression failed (libdeflate fails only when it cannot allocate).
    public struct Failure: Error, CustomStringConvertible {
        public var description: String { "gzip compression failed" }
    }

    /// How hard a copy is compressed.
    public enum Effort: Sendable {
        /// libdeflate at level 6: the smallest copy, for the feeds apps fetch often.
        case smallest
        /// ISA-L's igzip at level 1: about five times as fast as level 6 on the feeds of a big catalog,
        /// and twice as fast as libdeflate's level 1, for a copy about 7% larger than the
        /// latter's (1.74 MB instead of 1.62). Compressing was most of the publishing time of a
        /// big catalog.
        case fastest
    }

    /// Up to 1 MiB, the smallest copy: feeds that apps fetch often are small. Above, the fastest.
    public static func feedEffort(forBytes count: Int) -> Effort {
        count <= 1 << 20 ? .smallest : .fastest
    }

    /// One gzip member of `input`: the same bytes for the same input and effort.
    ///
    /// - Throws: ``Failure`` when the compressor fails.
    public static func compress(_ input: some ContiguousBytes, effort: Effort = .smallest) throws -> [UInt8] {
        let output = try input.withUnsafeBytes { source in
            switch effort {
            case .smallest: try deflate(source)
            case .fastest: try igzip(source)
            }
        }
        guard !output.isEmpty else { throw Failure() }
        return output
    }

    private static func deflate(_ source: UnsafeRawBufferPointer) throws -> [UInt8] {
        guard let compressor = libdeflate_alloc_compressor(6) else { throw Failure() }
        defer { libdeflate_free_compressor(compressor) }
        let bound = libdeflate_gzip_compress_bound(compressor, source.count)
        // Left uninitialized, not zeroed: the bound is about the input's size, and the pages that
        // compression never writes then take no memory (a big feed compresses about tenfold).
        return [UInt8](unsafeUninitializedCapacity: bound) { destination, initialized in
            initialized = libdeflate_gzip_compress(compressor, source.baseAddress, source.count, destination.baseAddress, bound)
        }
    }

    private static func igzip(_ source: UnsafeRawBufferPointer) throws -> [UInt8] {
        guard source.count < Int(UInt32.max) / 2 else { throw Failure() }
        return withLevel1Stream(initialize: isal_deflate_stateless_init) { stream in
            stream.pointee.end_of_stream = 1
            stream.pointee.next_in = UnsafeMutablePointer(mutating: source.baseAddress?.assumingMemoryBound(to: UInt8.self))
            stream.pointee.avail_in = UInt32(source.count)
            // Incompressible input is stored in blocks of at most 64 KiB, 5 bytes of framing each.
            let bound = source.count + source.count / 8192 + Int(ISAL_DEF_MAX_HDR_SIZE) + 64
            // Uninitialized, as above.
            return [UInt8](unsafeUninitializedCapacity: bound) { destination, initialized in
                stream.pointee.next_out = destination.baseAddress
                stream.pointee.avail_out = UInt32(bound)
                initialized = isal_deflate_stateless(stream) == COMP_OK ? Int(stream.pointee.total_out) : 0
            }
        }
    }

    /// A stream for `body`, set up by `initialize` (stateless or not), at ISA-L's level 1 with a
    /// generic gzip header: no name and no modification time, so identical input gives identical
    /// bytes. On the heap: the stream's state holds its history window.
    private static func withLevel1Stream<T>(
        initialize: (UnsafeMutablePointer<isal_zstream>) -> Void, _ body: (UnsafeMutablePointer<isal_zstream>) throws -> T
    ) rethrows -> T {
        let levelBytes = Int(cisal_level1_buffer_bytes())
        let levelBuffer = UnsafeMutablePointer<UInt8>.allocate(capacity: levelBytes)
        defer { levelBuffer.deallocate() }
        let stream = UnsafeMutablePointer<isal_zstream>.allocate(capacity: 1)
        defer { stream.deallocate() }
        initialize(stream)
        stream.pointee.level = 1
        stream.pointee.level_buf = levelBuffer
        stream.pointee.level_buf_size = UInt32(levelBytes)
        stream.pointee.gzip_flag = UInt16(IGZIP_GZIP)
        return try body(stream)
    }

    /// One gzip member of the bytes that `produce` hands over piece by piece, each compressed as
    /// it comes (ISA-L at level 1, as ``Effort/fastest``): the input is never held whole, only its
    /// copy. The same pieces give the same bytes.
    ///
    /// - Throws: ``Failure`` when the compressor fails, or what `produce` throws.
    public static func compressPieces(
        _ produce: (_ compress: (UnsafeRawBufferPointer) throws -> Void) throws -> Void
    ) throws -> [UInt8] {
        try withLevel1Stream(initialize: isal_deflate_init) { stream in try compressPieces(into: stream, produce) }
    }

    private static func compressPieces(
        into stream: UnsafeMutablePointer<isal_zstream>, _ produce: (_ compress: (UnsafeRawBufferPointer) throws -> Void) throws -> Void
    ) throws -> [UInt8] {
        let scratchBytes = 1 << 16
        let scratch = UnsafeMutablePointer<UInt8>.allocate(capacity: scratchBytes)
        defer { scratch.deallocate() }
        var output: [UInt8] = []
        func deflate(_ input: UnsafeRawBufferPointer, last: Bool) throws {
            guard input.count < Int(UInt32.max) / 2 else { throw Failure() }
            stream.pointee.next_in = UnsafeMutablePointer(mutating: input.baseAddress?.assumingMemoryBound(to: UInt8.self))
            stream.pointee.avail_in = UInt32(input.count)
            stream.pointee.end_of_stream = last ? 1 : 0
            // Until the piece is taken in and, with the last, the member is closed; a full
            // scratch buffer may hold back more.
            repeat {
                stream.pointee.next_out = scratch
                stream.pointee.avail_out = UInt32(scratchBytes)
                guard isal_deflate(stream) == COMP_OK else { throw Failure() }
                output.append(contentsOf: UnsafeBufferPointer(start: scratch, count: scratchBytes - Int(stream.pointee.avail_out)))
            } while stream.pointee.avail_in > 0 || stream.pointee.avail_out == 0
                || (last && stream.pointee.internal_state.state != ZSTATE_END)
        }
        try produce { try deflate($0, last: false) }
        try deflate(UnsafeRawBufferPointer(start: nil, count: 0), last: true)
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
