internal import CZlib

/// gzip with a fixed header (no name, zero mtime), so identical input gives identical bytes
/// and therefore an unchanged ETag.
public enum Gzip {
    /// Why compression failed (zlib only fails on memory exhaustion or misuse).
    public struct Failure: Error, CustomStringConvertible {
        public var description: String { "gzip compression failed" }
    }

    public static func compress(_ input: [UInt8], level: Int32 = 6) throws -> [UInt8] {
        var stream = z_stream()
        guard czlib_deflate_init_gzip(&stream, level) == Z_OK else { throw Failure() }
        defer { deflateEnd(&stream) }
        let bound = Int(deflateBound(&stream, uLong(input.count))) + 32
        var output = [UInt8](repeating: 0, count: bound)
        let produced: Int = input.withUnsafeBufferPointer { source in
            output.withUnsafeMutableBufferPointer { destination in
                stream.next_in = UnsafeMutablePointer(mutating: source.baseAddress)
                stream.avail_in = uInt(source.count)
                stream.next_out = destination.baseAddress
                stream.avail_out = uInt(destination.count)
                // deflateBound guarantees room for a single Z_FINISH call.
                guard deflate(&stream, Z_FINISH) == Z_STREAM_END else { return -1 }
                return Int(stream.total_out)
            }
        }
        guard produced >= 0 else { throw Failure() }
        output.removeLast(output.count - produced)
        return output
    }

    /// Decompresses a gzip member; nil if the bytes are not valid gzip.
    public static func decompress(_ input: [UInt8]) -> [UInt8]? {
        var stream = z_stream()
        guard czlib_inflate_init_gzip(&stream) == Z_OK else { return nil }
        defer { inflateEnd(&stream) }
        var output: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 64 * 1024)
        return input.withUnsafeBufferPointer { source -> [UInt8]? in
            stream.next_in = UnsafeMutablePointer(mutating: source.baseAddress)
            stream.avail_in = uInt(source.count)
            while true {
                let status: Int32 = chunk.withUnsafeMutableBufferPointer { buffer in
                    stream.next_out = buffer.baseAddress
                    stream.avail_out = uInt(buffer.count)
                    return inflate(&stream, Z_NO_FLUSH)
                }
                output.append(contentsOf: chunk[0..<(chunk.count - Int(stream.avail_out))])
                if status == Z_STREAM_END { return output }
                if status != Z_OK { return nil }
            }
        }
    }
}
