internal import CISAL
import Ledger

/// Notification bodies in the SQLite file, each compressed against an earlier one (docs/storage.md,
/// "Notification bodies").
///
/// An App Store notification is about 12.5 KB, and most of it is Apple's certificate chain, three
/// times over (the notification's and its nested tokens' headers): the same bytes in every
/// notification. Kept as posted, the bodies were half of what writing a notification's rows alone
/// cost (docs/benchmarks.md, "Notification bodies, compressed against another"). A body of at
/// least ``minimumBytes`` is now kept as raw DEFLATE (ISA-L, level 0) with the body of an earlier
/// notification of the same store, kept as posted, as the preset dictionary: its row names that
/// notification in `body_base`, and a body of 12.5 KB keeps about 0.6 KB. A body the base does not
/// shrink to a quarter (the first after a start, or Apple's certificates changed) is kept as posted
/// and becomes the base of those after it.
///
/// This relies on nothing deleting notifications: a base must outlive every row that names it, so
/// whatever comes to delete them (a retention period) must first keep, or store as posted again,
/// the bodies of the rows it keeps that name a row it deletes.
///
/// Confined to the writer's queue, like the writer.
final class NotificationBodyCompressor {
    /// Smaller bodies (Google Play's) are kept as posted: there is little to win.
    static let minimumBytes = 1024

    /// A base: the notification whose body is the dictionary, and that dictionary ready to use.
    private struct Base {
        let sequence: Int64
        let deflater: PresetDictionaryDeflater
    }

    /// The bases of committed transactions, by store.
    private var bases: [Marketplace: Base] = [:]
    /// Bases stored by the transaction under way: theirs once it commits, gone if it rolls back,
    /// since their rows are.
    private var pending: [Marketplace: Base] = [:]

    /// What a row keeps of `body`: the text as posted and no base, or its compression and its
    /// base's sequence.
    func storable(_ body: String, store: Marketplace) -> (body: SQLiteValue, base: Int64?) {
        var body = body
        guard body.utf8.count >= Self.minimumBytes, let base = pending[store] ?? bases[store] else { return (.text(body), nil) }
        let compressed = body.withUTF8 { base.deflater.compress(UnsafeRawBufferPointer($0), atMost: $0.count / 4) }
        guard let compressed else { return (.text(body), nil) }
        return (.blob(compressed), base.sequence)
    }

    /// After a body was stored as posted, as notification `sequence`: it becomes its store's
    /// base, for the notifications after it.
    func storedAsPosted(_ body: String, sequence: Int64, store: Marketplace) {
        guard body.utf8.count >= Self.minimumBytes, let deflater = PresetDictionaryDeflater(dictionary: body.utf8) else { return }
        pending[store] = Base(sequence: sequence, deflater: deflater)
    }

    /// The transaction that stored the pending bases committed.
    func committed() {
        bases.merge(pending) { _, new in new }
        pending = [:]
    }

    /// It rolled back: the rows of its bases are gone.
    func rolledBack() {
        pending = [:]
    }
}

/// Raw DEFLATE with a preset dictionary, by ISA-L at level 0 with DEFLATE's fixed Huffman code: the
/// dictionary's last 32 KiB (DEFLATE's window) is processed once and reused for every body
/// compressed against it.
///
/// Level 0 and the fixed code, because against a dictionary so like it a body is almost all long
/// matches, which leave a code built for each body little to win. On 2,000 of the benchmark's
/// notifications (`scripts/bench-purchases bodies`), level 1 with a code built for each gave about
/// 540 bytes a body in 6.6 µs, level 0 with the fixed code about 615 bytes in 1.9 µs, and with
/// ISA-L's default code about 780 bytes.
final class PresetDictionaryDeflater {
    /// DEFLATE's window: what a dictionary can be referred to by.
    static let windowBytes = 1 << 15

    private let stream: UnsafeMutablePointer<isal_zstream>
    private let dictionary: UnsafeMutablePointer<isal_dict>
    private let levelBuffer: UnsafeMutableBufferPointer<UInt8>

    /// Nil when ISA-L refuses the dictionary.
    init?(dictionary bytes: some BidirectionalCollection<UInt8>) {
        stream = .allocate(capacity: 1)
        dictionary = .allocate(capacity: 1)
        // Zeroed: ISA-L reads the level field before it sets it.
        UnsafeMutableRawPointer(dictionary).initializeMemory(as: UInt8.self, repeating: 0, count: MemoryLayout<isal_dict>.size)
        levelBuffer = .allocate(capacity: Int(cisal_level0_buffer_bytes()))
        Self.reset(stream, levelBuffer)
        var window = Array(bytes.suffix(Self.windowBytes))
        let processed = window.withUnsafeMutableBufferPointer {
            isal_deflate_process_dict(stream, dictionary, $0.baseAddress, UInt32($0.count))
        }
        guard processed == COMP_OK else { return nil }
    }

    deinit {
        stream.deallocate()
        dictionary.deallocate()
        levelBuffer.deallocate()
    }

    private static func reset(_ stream: UnsafeMutablePointer<isal_zstream>, _ levelBuffer: UnsafeMutableBufferPointer<UInt8>) {
        isal_deflate_init(stream)
        stream.pointee.level = 0
        stream.pointee.level_buf = levelBuffer.baseAddress
        stream.pointee.level_buf_size = UInt32(levelBuffer.count)
    }

    /// `input` compressed against the dictionary, or nil when that takes more than `limit` bytes.
    func compress(_ input: UnsafeRawBufferPointer, atMost limit: Int) -> [UInt8]? {
        guard limit > 0, input.count < Int(UInt32.max) else { return nil }
        Self.reset(stream, levelBuffer)
        guard isal_deflate_reset_dict(stream, dictionary) == COMP_OK,
            isal_deflate_set_hufftables(stream, nil, IGZIP_HUFFTABLE_STATIC) == COMP_OK
        else { return nil }
        var finished = false
        let output = [UInt8](unsafeUninitializedCapacity: limit) { output, count in
            stream.pointee.next_in = UnsafeMutablePointer(mutating: input.baseAddress?.assumingMemoryBound(to: UInt8.self))
            stream.pointee.avail_in = UInt32(input.count)
            stream.pointee.end_of_stream = 1
            stream.pointee.next_out = output.baseAddress
            stream.pointee.avail_out = UInt32(limit)
            // ISA-L may take more than one call to end the stream. Out of room, it stops short of
            // the end: then the body is not worth compressing.
            repeat {
                guard stream.pointee.avail_out > 0, isal_deflate(stream) == COMP_OK else { break }
                finished = stream.pointee.internal_state.state == ZSTATE_END
            } while !finished
            count = finished ? limit - Int(stream.pointee.avail_out) : 0
        }
        return finished ? output : nil
    }

    /// `compressed` inflated with `dictionary` (whose last 32 KiB it was compressed against); nil
    /// when it is not one whole raw DEFLATE stream or inflates past `limit` bytes.
    static func inflate(_ compressed: [UInt8], dictionary: UnsafeRawBufferPointer, limit: Int = 1 << 24) -> [UInt8]? {
        guard compressed.count < Int(UInt32.max) else { return nil }
        let state = UnsafeMutablePointer<inflate_state>.allocate(capacity: 1)
        defer { state.deallocate() }
        isal_inflate_init(state)
        let window = UnsafeRawBufferPointer(rebasing: dictionary.suffix(windowBytes))
        guard
            isal_inflate_set_dict(
                state, UnsafeMutablePointer(mutating: window.baseAddress?.assumingMemoryBound(to: UInt8.self)), UInt32(window.count))
                == COMP_OK
        else { return nil }
        var output: [UInt8] = []
        let pieceBytes = 1 << 16
        return compressed.withUnsafeBytes { input -> [UInt8]? in
            state.pointee.next_in = UnsafeMutablePointer(mutating: input.baseAddress?.assumingMemoryBound(to: UInt8.self))
            state.pointee.avail_in = UInt32(input.count)
            while state.pointee.block_state != ISAL_BLOCK_FINISH {
                guard output.count < limit else { return nil }
                let before = output.count
                var status = ISAL_DECOMP_OK
                output.append(
                    contentsOf: [UInt8](unsafeUninitializedCapacity: pieceBytes) { piece, count in
                        state.pointee.next_out = piece.baseAddress
                        state.pointee.avail_out = UInt32(pieceBytes)
                        status = isal_inflate(state)
                        count = pieceBytes - Int(state.pointee.avail_out)
                    })
                // Cut short: no more output, and not finished.
                guard status == ISAL_DECOMP_OK, output.count > before || state.pointee.block_state == ISAL_BLOCK_FINISH else {
                    return nil
                }
            }
            // One stream, nothing after it: no input left, nor whole bytes in ISA-L's bit buffer
            // (what is left there is the last byte's padding).
            let unread = Int(state.pointee.avail_in) + Int(state.pointee.read_in_length) / 8
            return unread == 0 && output.count <= limit ? output : nil
        }
    }
}

extension RawNotification {
    /// What a SQLite query of notifications (as `n`) reads besides ``columns`` for a compressed
    /// body: its base, and the base's body.
    static let sqliteBodyColumns =
        "n.body_base, (SELECT b.body FROM purchase_notifications b WHERE b.sequence = n.body_base) AS base_body"

    /// The notification on `statement`'s row, its body inflated if it was compressed; an error
    /// when it cannot be (the store was damaged).
    static func stored(in statement: SQLiteStatement) -> Result<RawNotification, SQLiteError> {
        var notification = RawNotification(row: SQLiteRow(statement: statement))
        guard let base = statement.column("body_base").flatMap(statement.optionalInteger) else { return .success(notification) }
        guard let compressed = statement.column("body").flatMap(statement.blob),
            let dictionary = statement.column("base_body").flatMap(statement.blob),
            let body = dictionary.withUnsafeBytes({ PresetDictionaryDeflater.inflate(compressed, dictionary: $0) })
        else {
            return .failure(
                SQLiteError(
                    "notification \(notification.sequence)'s body cannot be read against notification \(base)'s: the store is damaged"))
        }
        notification.body = String(decoding: body, as: UTF8.self)
        return .success(notification)
    }
}
