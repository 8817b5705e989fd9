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

    private var events: RecordedEventReader
    private let state: PlainReadState
    /// Whether the element has been read to its end.
    public private(set) var isFinished = false
    /// Where the element's recording ends, once it is finished.
    var offset: Int { events.offset }

    init(_ tape: UnsafeRawBufferPointer, from offset: Int, state: PlainReadState) {
        events = RecordedEventReader(tape, from: offset)
        self.state = state
        state.containers.removeAll(keepingCapacity: true)
        state.keys.removeAll(keepingCapacity: true)
    }

    /// The next token of the element, or nil after its end.
    public mutating func next() throws(NotPlain) -> Token? {
        guard !isFinished else { return nil }
        switch events.next() {
        case .start(let element?, _, let position)?:
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
                // A key joined from pieces is left to building: the duplicate check keeps keys in place.
                guard key.isInPlace else { throw NotPlain() }
                for earlier in state.keys[state.containers[top].firstKey...]
                where earlier.count == key.bytes.count
                    && (earlier.isEmpty || memcmp(earlier.baseAddress!, key.bytes.baseAddress!, earlier.count) == 0)
                {
                    throw NotPlain()
                }
                state.keys.append(key.bytes)
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
        case .end?:
            guard let top = state.containers.popLast(), !top.hasPendingKey else { throw NotPlain() }
            state.keys.removeSubrange(top.firstKey...)
            finishIfTopLevel()
            return .end
        case .start(nil, _, _)?, .text?, .misplacedText?, nil:
            throw NotPlain()
        }
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

    /// The text of the scalar whose start tag was just read, through its end tag: in place in
    /// the recording when it came in one piece, else joined in the scratch buffer.
    private mutating func scalarText() throws(NotPlain) -> (bytes: UnsafeBufferPointer<UInt8>, isInPlace: Bool) {
        var first = UnsafeBufferPointer<UInt8>(start: nil, count: 0)
        var pieces = 0
        while true {
            switch events.next() {
            case .text(let bytes)?:
                if pieces == 1 {
                    state.scratchCount = 0
                    state.appendToScratch(first)
                }
                if pieces == 0 { first = bytes } else { state.appendToScratch(bytes) }
                pieces += 1
            case .end?:
                return pieces > 1 ? (UnsafeBufferPointer(rebasing: state.scratch[..<state.scratchCount]), false) : (first, true)
            case .start?, .misplacedText?, nil:
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
    /// The keys of the open dicts, in place in the recording, for the duplicate check.
    @exclusivity(unchecked) var keys: [UnsafeBufferPointer<UInt8>] = []
    /// Text that came in several pieces, joined; overwritten by the next such text.
    @exclusivity(unchecked) private(set) var scratch = UnsafeMutableBufferPointer<UInt8>.allocate(capacity: 256)
    @exclusivity(unchecked) var scratchCount = 0

    func appendToScratch(_ bytes: UnsafeBufferPointer<UInt8>) {
        if scratchCount + bytes.count > scratch.count {
            let larger = UnsafeMutableBufferPointer<UInt8>.allocate(capacity: max(scratch.count * 2, scratchCount + bytes.count))
            _ = larger.initialize(fromContentsOf: scratch[..<scratchCount])
            scratch.deallocate()
            scratch = larger
        }
        UnsafeMutableRawBufferPointer(start: scratch.baseAddress! + scratchCount, count: bytes.count)
            .copyMemory(from: UnsafeRawBufferPointer(bytes))
        scratchCount += bytes.count
    }

    deinit { scratch.deallocate() }
}
