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

    /// The size of the pieces the fastest copy is made from: ISA-L's output depends on how its
    /// input is cut, and a big feed is compressed a mebibyte at a time as it is written
    /// (``Publisher/writeFeed(_:to:)``), so every fastest copy is made that way.
    static let fastestPieceBytes = 1 << 20

    private static func igzip(_ source: UnsafeRawBufferPointer) throws -> [UInt8] {
        try compressChunks { compress in
            var start = 0
            repeat {
                let end = min(start + fastestPieceBytes, source.count)
                try compress(UnsafeRawBufferPointer(rebasing: source[start..<end]), end == source.count)
                start = end
            } while start < source.count
        }
    }

    /// A stream for `body` at ISA-L's level 1 with a generic gzip header: no name and no
    /// modification time, so identical input gives identical bytes. On the heap: the stream's state
    /// holds its history window.
    private static func withLevel1Stream<T>(_ body: (UnsafeMutablePointer<isal_zstream>) throws -> T) rethrows -> T {
        let levelBytes = Int(cisal_level1_buffer_bytes())
        let levelBuffer = UnsafeMutablePointer<UInt8>.allocate(capacity: levelBytes)
        defer { levelBuffer.deallocate() }
        let stream = UnsafeMutablePointer<isal_zstream>.allocate(capacity: 1)
        defer { stream.deallocate() }
        isal_deflate_init(stream)
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
        try compressChunks { compress in try withoutActuallyEscaping(compress) { compress in try produce { try compress($0, false) } } }
    }

    /// The same, with the producer saying which piece is the last: the member then ends with it,
    /// as it does when all the bytes are compressed at once (``Effort/fastest``), rather than with
    /// an empty block of its own.
    static func compressChunks(
        _ produce: (_ compress: (_ piece: UnsafeRawBufferPointer, _ isLast: Bool) throws -> Void) throws -> Void
    ) throws -> [UInt8] {
        try withLevel1Stream { stream in try compressChunks(into: stream, produce) }
    }

    private static func compressChunks(
        into stream: UnsafeMutablePointer<isal_zstream>,
        _ produce: (_ compress: (_ piece: UnsafeRawBufferPointer, _ isLast: Bool) throws -> Void) throws -> Void
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
        var ended = false
        try produce { piece, isLast in
            guard !ended else { throw Failure() }
            try deflate(piece, last: isLast)
            ended = isLast
        }
        if !ended { try deflate(UnsafeRawBufferPointer(start: nil, count: 0), last: true) }
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

extension Gzip {
    /// Why bytes could not be read as gzip.
    public struct Invalid: Error, CustomStringConvertible {
        public var description: String { "not one valid gzip member" }
    }

    /// The lines of one gzip member, inflated a piece at a time by ISA-L's stateful inflate, which
    /// keeps its own history window: a product snapshot of 25 MB is read with only its compressed
    /// bytes and about a mebibyte of lines in memory (docs/benchmarks.md, "The rebuild's memory").
    /// The member's checksum and length are verified when its end is read.
    ///
    /// Empty lines are skipped. `@unchecked Sendable`: it is handed from the thread that makes it to
    /// the one that reads it, and used by one thread at a time.
    final class Lines: @unchecked Sendable {
        private let compressed: [UInt8]
        /// How many of `compressed` the inflater has taken in.
        private var consumed = 0
        private let state: UnsafeMutablePointer<inflate_state>
        private var buffer: UnsafeMutableRawBufferPointer
        /// The bytes inflated and not yet lent as lines: `buffer[start..<end]`.
        private var start = 0
        private var end = 0
        /// The member's end is read and verified.
        private var finished = false

        /// A line longer than the buffer doubles it.
        static let bufferBytes = reusableBufferBytes

        init(_ compressed: [UInt8], bufferBytes: Int = Lines.bufferBytes) {
            self.compressed = compressed
            state = .allocate(capacity: 1)
            isal_inflate_init(state)
            state.pointee.crc_flag = UInt32(ISAL_GZIP)
            buffer = .allocate(byteCount: max(bufferBytes, 1), alignment: 16)
        }

        deinit {
            state.deallocate()
            buffer.deallocate()
        }

        /// Lends the next non-empty line, without its newline, to `body`, until the next line is
        /// read; nil after the last line.
        ///
        /// - Throws: ``Invalid`` when the bytes are not one gzip member (a checksum, a length or
        ///   bytes after it included), or what `body` throws.
        func withNextLine<R>(_ body: (UnsafeRawBufferPointer) throws -> R) throws -> R? {
            while true {
                let base = buffer.baseAddress!
                if start < end, let newline = memchr(base + start, 0x0A, end - start) {
                    let line = start..<(UnsafeRawPointer(newline) - UnsafeRawPointer(base))
                    start = line.upperBound + 1
                    if line.isEmpty { continue }
                    return try body(UnsafeRawBufferPointer(rebasing: buffer[line]))
                }
                if finished {
                    guard start < end else { return nil }
                    defer { start = end }
                    return try body(UnsafeRawBufferPointer(rebasing: buffer[start..<end]))
                }
                // Room for more: what is left moves to the front, and a line that fills the whole
                // buffer doubles it.
                if start > 0 {
                    memmove(base, base + start, end - start)
                    (start, end) = (0, end - start)
                }
                if end == buffer.count {
                    let larger = UnsafeMutableRawBufferPointer.allocate(byteCount: buffer.count * 2, alignment: 16)
                    larger.copyMemory(from: UnsafeRawBufferPointer(buffer))
                    buffer.deallocate()
                    buffer = larger
                }
                try inflate()
            }
        }

        /// Inflates into the free end of the buffer.
        private func inflate() throws {
            let produced = try compressed.withUnsafeBytes { input -> Int in
                guard input.count < Int(UInt32.max) else { throw Invalid() }
                state.pointee.next_in = UnsafeMutablePointer(mutating: input.baseAddress?.assumingMemoryBound(to: UInt8.self)).map {
                    $0 + consumed
                }
                state.pointee.avail_in = UInt32(input.count - consumed)
                state.pointee.next_out = buffer.baseAddress!.assumingMemoryBound(to: UInt8.self) + end
                state.pointee.avail_out = UInt32(buffer.count - end)
                guard isal_inflate(state) == ISAL_DECOMP_OK else { throw Invalid() }
                let before = consumed
                consumed = input.count - Int(state.pointee.avail_in)
                let produced = buffer.count - end - Int(state.pointee.avail_out)
                if state.pointee.block_state == ISAL_BLOCK_FINISH {
                    // One member, nothing after it.
                    guard consumed == input.count else { throw Invalid() }
                    finished = true
                } else if produced == 0 && consumed == before {
                    throw Invalid()  // cut short
                }
                return produced
            }
            end += produced
        }
    }
}
