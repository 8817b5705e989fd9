import Foundation

/// One recorded element read in place, token by token, for a reader that knows the shape it
/// expects: no values are built, and strings and keys come as bytes.
///
/// Only a *plain* element reads through: known elements, every dict key unique and followed by
/// a value, every scalar valid, no stray text. Those are exactly the elements that building
/// reports nothing about. Anything else throws ``NotPlain`` and the element is built the
/// ordinary way, with its diagnostics (see ``RecordedElementBuilder/build(_:readingPlain:_:)``).
///
/// Bytes handed out stay valid only during the `readingPlain` call that gets the cursor; the
/// bytes of a string or key stay valid only until the next call to ``next()``.
public struct PlainElementCursor {
    /// The element is not plain, or (thrown by a reader) not of the shape the reader takes.
    public struct NotPlain: Error {
        public init() {}
    }

    public enum Token {
        case startDictionary(SourcePosition)
        case startArray(SourcePosition)
        /// The end of the innermost open dict or array.
        case end
        case key(UnsafeBufferPointer<UInt8>, SourcePosition)
        /// A `<string>`'s text, exactly the bytes a built `.string` value would hold.
        case string(UnsafeBufferPointer<UInt8>, SourcePosition)
        /// Any other scalar, parsed exactly as building parses it.
        case value(PropertyListValue, SourcePosition)
    }

    private let tape: UnsafeRawBufferPointer
    private(set) var offset: Int
    private let state: PlainReadState
    /// Whether the element has been read to its end.
    public private(set) var isFinished = false

    init(_ tape: UnsafeRawBufferPointer, from offset: Int, state: PlainReadState) {
        self.tape = tape
        self.offset = offset
        self.state = state
        state.containers.removeAll(keepingCapacity: true)
        state.keys.removeAll(keepingCapacity: true)
    }

    /// The next token of the element, or nil after its end.
    public mutating func next() throws(NotPlain) -> Token? {
        guard !isFinished else { return nil }
        switch try event() {
        case .start:
            let position = try load(SourcePosition.self)
            guard let element = PlistElement(rawValue: try load(UInt8.self)) else { throw NotPlain() }
            switch element {
            case .plist:
                throw NotPlain()
            case .dict, .array:
                try beginValue()
                state.containers.append(.init(isDictionary: element == .dict, hasPendingKey: false, firstKey: state.keys.count))
                return element == .dict ? .startDictionary(position) : .startArray(position)
            case .key:
                guard let top = state.containers.indices.last, state.containers[top].isDictionary,
                    !state.containers[top].hasPendingKey
                else { throw NotPlain() }
                let key = try scalarText()
                guard let start = key.tapeOffset else { throw NotPlain() }
                for earlier in state.keys[state.containers[top].firstKey...]
                where earlier.count == key.bytes.count
                    && memcmp(tape.baseAddress! + earlier.start, tape.baseAddress! + start, earlier.count) == 0
                {
                    throw NotPlain()
                }
                state.keys.append((start, key.bytes.count))
                state.containers[top].hasPendingKey = true
                return .key(key.bytes, position)
            case .string:
                try beginValue()
                let text = try scalarText()
                finishIfTopLevel()
                return .string(text.bytes, position)
            case .integer, .real, .true, .false, .date, .data:
                try beginValue()
                let text = try scalarText()
                guard let value = element.scalarValue(text.bytes).value else { throw NotPlain() }
                finishIfTopLevel()
                return .value(value, position)
            }
        case .end:
            guard let top = state.containers.popLast(), !top.hasPendingKey else { throw NotPlain() }
            state.keys.removeSubrange(top.firstKey...)
            finishIfTopLevel()
            return .end
        case .text, .textAt:
            throw NotPlain()
        }
    }

    /// Where the element that starts at `offset` ends: past its last event, or the end of the
    /// tape when it was cut short.
    static func endOfElement(in tape: UnsafeRawBufferPointer, from offset: Int) -> Int {
        var offset = offset
        var depth = 0
        repeat {
            guard offset < tape.count else { return tape.count }
            let event = ElementRecorder.Event(rawValue: tape[offset])!
            offset += 1
            switch event {
            case .start:
                offset += MemoryLayout<SourcePosition>.size
                let raw = tape[offset]
                offset += 1
                if raw == ElementRecorder.unknownElement {
                    while offset < tape.count && tape[offset] != 0 { offset += 1 }
                    offset += 1
                }
                depth += 1
            case .text, .textAt:
                if event == .textAt { offset += MemoryLayout<SourcePosition>.size }
                let count = tape.loadUnaligned(fromByteOffset: offset, as: Int.self)
                offset += MemoryLayout<Int>.size + count
            case .end:
                depth -= 1
            }
        } while depth > 0
        return min(offset, tape.count)
    }

    // MARK: Reading the tape

    private mutating func event() throws(NotPlain) -> ElementRecorder.Event {
        ElementRecorder.Event(rawValue: try load(UInt8.self))!
    }

    private mutating func load<T>(_ type: T.Type) throws(NotPlain) -> T {
        guard offset + MemoryLayout<T>.size <= tape.count else { throw NotPlain() }
        defer { offset += MemoryLayout<T>.size }
        return tape.loadUnaligned(fromByteOffset: offset, as: type)
    }

    /// A value is starting: in a dict, it uses up the pending key.
    private func beginValue() throws(NotPlain) {
        guard let top = state.containers.indices.last, state.containers[top].isDictionary else { return }
        guard state.containers[top].hasPendingKey else { throw NotPlain() }
        state.containers[top].hasPendingKey = false
    }

    private mutating func finishIfTopLevel() {
        if state.containers.isEmpty { isFinished = true }
    }

    /// The text of the scalar whose start tag was just read, through its end tag: in place when
    /// it came in one piece (with its offset in the tape), else joined in the scratch buffer.
    private mutating func scalarText() throws(NotPlain) -> (bytes: UnsafeBufferPointer<UInt8>, tapeOffset: Int?) {
        var first: (start: Int, count: Int)?
        var pieces = 0
        while true {
            switch try event() {
            case .text:
                let count = try load(Int.self)
                guard offset + count <= tape.count else { throw NotPlain() }
                if pieces == 0 {
                    first = (offset, count)
                } else {
                    if pieces == 1 {
                        state.scratchCount = 0
                        state.appendToScratch(UnsafeRawBufferPointer(rebasing: tape[first!.start..<first!.start + first!.count]))
                    }
                    state.appendToScratch(UnsafeRawBufferPointer(rebasing: tape[offset..<offset + count]))
                }
                pieces += 1
                offset += count
            case .end:
                switch pieces {
                case 0:
                    return (UnsafeBufferPointer(start: nil, count: 0), offset)
                case 1:
                    let bytes = UnsafeRawBufferPointer(rebasing: tape[first!.start..<first!.start + first!.count])
                    return (bytes.assumingMemoryBound(to: UInt8.self), first!.start)
                default:
                    return (UnsafeBufferPointer(rebasing: state.scratch[..<state.scratchCount]), nil)
                }
            case .start, .textAt:
                throw NotPlain()
            }
        }
    }
}

/// What a ``PlainElementCursor`` keeps while reading, reused from element to element.
///
/// Its properties are touched on every token, by one thread at a time; the runtime
/// exclusivity checks on them cost a quarter of reading in place.
final class PlainReadState {
    struct Container {
        var isDictionary: Bool
        var hasPendingKey: Bool
        /// Where this dict's keys start in `keys`.
        var firstKey: Int
    }

    @exclusivity(unchecked) var containers: [Container] = []
    /// The keys of the open dicts, as places in the tape, for the duplicate check.
    @exclusivity(unchecked) var keys: [(start: Int, count: Int)] = []
    /// Text that came in several pieces, joined; overwritten by the next such text.
    @exclusivity(unchecked) private(set) var scratch = UnsafeMutableBufferPointer<UInt8>.allocate(capacity: 256)
    @exclusivity(unchecked) var scratchCount = 0

    func appendToScratch(_ bytes: UnsafeRawBufferPointer) {
        if scratchCount + bytes.count > scratch.count {
            let larger = UnsafeMutableBufferPointer<UInt8>.allocate(capacity: max(scratch.count * 2, scratchCount + bytes.count))
            _ = larger.initialize(fromContentsOf: scratch[..<scratchCount])
            scratch.deallocate()
            scratch = larger
        }
        UnsafeMutableRawBufferPointer(start: scratch.baseAddress! + scratchCount, count: bytes.count).copyMemory(from: bytes)
        scratchCount += bytes.count
    }

    deinit { scratch.deallocate() }
}
