import Foundation

/// The size of a working buffer kept from piece to piece: under the mebibyte from which `catalog`
/// has malloc map fresh pages (CMallocTuning), so that it stays in the heap instead of being
/// mapped, faulted in and unmapped again each time it grows past that.
let reusableBufferBytes = (1 << 20) - (1 << 16)

extension UnsafeBufferPointer<UInt8> {
    /// Calls `body` with the range of each line of these bytes, in order, without its newline (the
    /// last line needs none), empty lines included. Newlines are found with `memchr`: `split` and
    /// generic searches compared byte by byte, tens of milliseconds of one core for the records of a
    /// big catalog that every rebuild reads (docs/benchmarks.md, "The build's single-core stretches").
    func forEachLine(_ body: (Range<Int>) throws -> Void) rethrows {
        guard let base = baseAddress.map(UnsafeRawPointer.init) else { return }
        var start = 0
        while start < count {
            let end = memchr(base + start, 0x0A, count - start).map { UnsafeRawPointer($0) - base } ?? count
            try body(start..<end)
            start = end + 1
        }
    }

    /// How many lines ``forEachLine(_:)`` gives, for tables sized once.
    var lineCount: Int {
        var lines = 0
        forEachLine { _ in lines += 1 }
        return lines
    }
}
