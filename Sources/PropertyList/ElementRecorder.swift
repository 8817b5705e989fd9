internal import CLibXML2

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Records the elements of a streamed array into ``RecordedElements`` as the parser meets them.
///
/// It keeps just enough state to do the parser-side part of the builder's checks, which a
/// replay could not: it enforces the text limit of a value (stopping the parser, as the
/// builder would), and notes the position of text that will be reported as misplaced, while
/// whitespace between elements (most text events of an indented file) is dropped.
struct ElementRecorder {
    enum Event: UInt8 {
        /// Position, element kind (or 255 then the NUL-terminated name of an unknown element).
        case start
        /// Byte count, bytes.
        case text
        /// Position, byte count, bytes: text that is not a value, reported where it stands.
        case textAt
        case end
    }

    private static let unknownElement: UInt8 = 255

    let batchSize: Int
    let deliver: (RecordedElements) -> Void
    private var batch = RecordedElements(tape: ByteTape(capacity: 1 << 16), count: 0)
    /// Open elements of the element being recorded; 0 between elements.
    private var depth = 0
    /// The depth of the open scalar, whose text is a value (nil inside unknown elements).
    private var scalarDepth: Int?
    private var scalarTextBytes = 0
    /// The depth of the outermost unknown or misplaced element being skipped, if any.
    private var skippedDepth: Int?

    init(batchSize: Int, deliver: @escaping (RecordedElements) -> Void) {
        self.batchSize = max(1, batchSize)
        self.deliver = deliver
    }

    var isRecording: Bool { depth > 0 }

    mutating func recordStart(_ element: PlistElement?, name: UnsafePointer<UInt8>, at position: SourcePosition) {
        depth += 1
        batch.tape.append(Event.start.rawValue)
        batch.tape.append(raw: position)
        if let element {
            batch.tape.append(element.rawValue)
        } else {
            batch.tape.append(Self.unknownElement)
            batch.tape.append(
                UnsafeBufferPointer(start: name, count: strlen(UnsafeRawPointer(name).assumingMemoryBound(to: CChar.self)) + 1))
        }
        // Mirrors the builder: unknown elements, <plist> and anything inside a scalar are skipped.
        guard skippedDepth == nil else { return }
        if scalarDepth != nil || element == nil || element == .plist {
            skippedDepth = depth
        } else if element!.isScalar {
            scalarDepth = depth
            scalarTextBytes = 0
        }
    }

    /// Records text; false when a value's text goes over the limit (nothing more is recorded).
    mutating func recordText(_ bytes: UnsafeBufferPointer<UInt8>, from parser: XMLStreamParser) -> Bool {
        if scalarDepth == depth && skippedDepth == nil {
            scalarTextBytes += bytes.count
            guard scalarTextBytes <= parser.limits.maximumTextBytes else { return false }
            batch.tape.append(Event.text.rawValue)
        } else if bytes.contains(where: { !isXMLWhitespace($0) }) {
            batch.tape.append(Event.textAt.rawValue)
            batch.tape.append(raw: parser.cursorPosition)
        } else {
            return true
        }
        batch.tape.append(raw: bytes.count)
        batch.tape.append(bytes)
        return true
    }

    mutating func recordEnd() {
        batch.tape.append(Event.end.rawValue)
        if skippedDepth == depth { skippedDepth = nil }
        if scalarDepth == depth { scalarDepth = nil }
        depth -= 1
        if depth == 0 {
            batch.count += 1
            if batch.count == batchSize { deliverBatch() }
        }
    }

    /// Hands over the elements recorded so far (with an element cut short by a stopped parser).
    mutating func deliverBatch() {
        guard !batch.tape.isEmpty else { return }
        let capacity = batch.tape.capacity
        deliver(batch)
        batch = RecordedElements(tape: ByteTape(capacity: capacity), count: 0)
    }
}

/// A growable byte buffer written field by field through a pointer: the recorder writes a few
/// small fields per SAX event, millions of them, and an Array checked uniqueness and capacity
/// and called memmove for each. Fields are stored unaligned, as ``RecordedEventReader`` reads them.
///
/// `@unchecked Sendable`: a tape is written by one recorder, then handed whole to the thread
/// that reads it; the recorder never touches it again.
final class ByteTape: @unchecked Sendable {
    @exclusivity(unchecked) private var base: UnsafeMutableRawPointer
    @exclusivity(unchecked) private(set) var count = 0
    @exclusivity(unchecked) private(set) var capacity: Int

    init(capacity: Int) {
        self.capacity = max(capacity, 64)
        base = .allocate(byteCount: self.capacity, alignment: 16)
    }

    deinit { base.deallocate() }

    var isEmpty: Bool { count == 0 }

    func append(_ byte: UInt8) {
        reserve(1)
        base.storeBytes(of: byte, toByteOffset: count, as: UInt8.self)
        count += 1
    }

    /// The bytes of `value` as they are in memory.
    func append<Value: BitwiseCopyable>(raw value: Value) {
        reserve(MemoryLayout<Value>.size)
        base.storeBytes(of: value, toByteOffset: count, as: Value.self)
        count += MemoryLayout<Value>.size
    }

    func append(_ bytes: UnsafeBufferPointer<UInt8>) {
        guard let source = bytes.baseAddress else { return }
        reserve(bytes.count)
        (base + count).copyMemory(from: source, byteCount: bytes.count)
        count += bytes.count
    }

    func withUnsafeBytes<Result>(_ body: (UnsafeRawBufferPointer) throws -> Result) rethrows -> Result {
        try body(UnsafeRawBufferPointer(start: base, count: count))
    }

    private func reserve(_ bytes: Int) {
        if count + bytes > capacity { grow(toHold: count + bytes) }
    }

    @inline(never) private func grow(toHold bytes: Int) {
        var grown = capacity * 2
        while grown < bytes { grown *= 2 }
        let moved = UnsafeMutableRawPointer.allocate(byteCount: grown, alignment: 16)
        moved.copyMemory(from: base, byteCount: count)
        base.deallocate()
        base = moved
        capacity = grown
    }
}

/// One event of a recording.
enum RecordedEvent {
    /// A start tag: a plist element, or (nil) an unknown one; `name` is NUL-terminated.
    case start(PlistElement?, name: UnsafePointer<UInt8>, at: SourcePosition)
    /// Text of a value.
    case text(UnsafeBufferPointer<UInt8>)
    /// Text that is not a value, where it stands.
    case misplacedText(UnsafeBufferPointer<UInt8>, at: SourcePosition)
    case end
}

/// Reads a recording event by event: the one reader of the layout ``ElementRecorder`` writes,
/// for the builder's replay and for ``PlainElementCursor``. The recorder writes whole events,
/// so a recording never ends inside one.
struct RecordedEventReader {
    let tape: UnsafeRawBufferPointer
    private(set) var offset: Int

    init(_ tape: UnsafeRawBufferPointer, from offset: Int = 0) {
        self.tape = tape
        self.offset = offset
    }

    /// The next event, or nil at the end of the recording.
    mutating func next() -> RecordedEvent? {
        guard offset < tape.count else { return nil }
        switch ElementRecorder.Event(rawValue: load(UInt8.self))! {
        case .start:
            let position = load(SourcePosition.self)
            let raw = load(UInt8.self)
            if let element = PlistElement(rawValue: raw) { return .start(element, name: element.cName.utf8Start, at: position) }
            let name = (tape.baseAddress! + offset).assumingMemoryBound(to: UInt8.self)
            offset += strlen(UnsafeRawPointer(name).assumingMemoryBound(to: CChar.self)) + 1
            return .start(nil, name: UnsafePointer(name), at: position)
        case .text:
            return .text(bytes())
        case .textAt:
            let position = load(SourcePosition.self)
            return .misplacedText(bytes(), at: position)
        case .end:
            return .end
        }
    }

    /// Moves past the element that starts here, or to the end of the recording if it was cut short.
    mutating func skipElement() {
        var depth = 0
        repeat {
            switch next() {
            case .start?: depth += 1
            case .end?: depth -= 1
            case .text?, .misplacedText?: break
            case nil: return
            }
        } while depth > 0
    }

    private mutating func load<T>(_ type: T.Type) -> T {
        defer { offset += MemoryLayout<T>.size }
        return tape.loadUnaligned(fromByteOffset: offset, as: type)
    }

    /// A byte count, then that many bytes.
    private mutating func bytes() -> UnsafeBufferPointer<UInt8> {
        let count = load(Int.self)
        defer { offset += count }
        return UnsafeBufferPointer(start: (tape.baseAddress! + offset).assumingMemoryBound(to: UInt8.self), count: count)
    }
}
