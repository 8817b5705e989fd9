internal import CLibXML2

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Builds values from SAX events with an explicit stack: no recursion, so depth costs no stack.
///
/// Frames are plain structs mutated in place at the top of the stack, and dict keys are
/// interned: this runs for every element of files with millions of them. When reading with a
/// streamed array, the elements of that array are recorded (``ElementRecorder``) rather than
/// built, and another builder, in the `streamedElements` context, replays them.
final class PropertyListBuilder: XMLEventHandler {
    struct Problem {
        var position: SourcePosition
        var message: String
    }

    enum Context {
        /// A whole document, starting with `<plist>`.
        case document
        /// Recorded elements of a streamed array, each handed to `onStreamedElement`.
        case streamedElements
    }

    private struct Frame {
        enum Kind: Equatable {
            case plist, array, dictionary
            /// An unknown element: its content is skipped.
            case skipped
        }

        var kind: Kind
        var position: SourcePosition
        var items: [PropertyListNode] = []
        var entries: [PropertyListDictionary.Entry] = []
        var pendingKey: String?
        var pendingKeyPosition = SourcePosition.startOfFile
        /// Built once a dict grows past a few keys, so duplicate checks stay linear overall.
        var keyIndex: [String: Int]?
        /// After a duplicate key (already reported), its value is dropped silently.
        var dropsNextValue = false
        /// The array whose elements go to the caller one by one instead of into `items`.
        var streamed = false

        init(_ kind: Kind, at position: SourcePosition) {
            self.kind = kind
            self.position = position
        }
    }

    // Touched on every SAX event of a single-threaded parse; the runtime exclusivity check on
    // each access cost about a tenth of the reading time of a large catalog.
    @exclusivity(unchecked) private var stack: [Frame] = []
    @exclusivity(unchecked) private var text: [UInt8] = []
    /// Dict keys met so far: their bytes end to end in `internedKeyBytes`, where each ends, and
    /// the shared String. Plain arrays compared in place: this runs for every key of a file.
    @exclusivity(unchecked) private var internedKeyBytes: [UInt8] = []
    @exclusivity(unchecked) private var internedKeyEnds: [Int] = []
    @exclusivity(unchecked) private var internedKeys: [String] = []
    /// The scalar element being read, if any. Scalars cannot nest and are most of the elements,
    /// so they are kept here rather than pushed as frames.
    @exclusivity(unchecked) private var openScalar: (kind: PlistElement, position: SourcePosition)?
    /// Records the streamed array's elements instead of building them, when `records`. Stored
    /// in place, not optional: each event mutates it without a copy or a reference count.
    @exclusivity(unchecked) private var recorder: ElementRecorder
    @exclusivity(unchecked) private var elementNames = ElementNameCache()
    private(set) var root: PropertyListNode?
    private var problems: [Problem] = []
    private let streamingKey: String?
    /// Whether this builder records the streamed array (a document read with one) rather than
    /// building it.
    private var records: Bool { streamingKey != nil }
    var onStreamedElement: (PropertyListNode) -> Void = { _ in }

    init(context: Context, streaming: (key: String, recorder: ElementRecorder)?) {
        streamingKey = streaming?.key
        recorder = streaming?.recorder ?? ElementRecorder(batchSize: 1) { _ in }
        stack.reserveCapacity(16)
        text.reserveCapacity(256)
        if context == .streamedElements { resetToStreamedArray() }
    }

    private func resetToStreamedArray() {
        var array = Frame(.array, at: .startOfFile)
        array.streamed = true
        stack = [array]
        openScalar = nil
        text.removeAll(keepingCapacity: true)
    }

    private func problem(_ message: String, at position: SourcePosition) {
        problems.append(Problem(position: position, message: message))
    }

    /// The problems found so far, as diagnostics in `file`; they are not reported again.
    func takeProblems(file: String) -> [Diagnostic] {
        defer { problems.removeAll() }
        return problems.map { Diagnostic(.error, file: file, at: $0.position, $0.message) }
    }

    /// The kind of the innermost open element, read in place: `stack.last` would copy the whole
    /// frame, with a reference count on each of its arrays, on every event.
    private var topKind: Frame.Kind? {
        stack.isEmpty ? nil : stack[stack.count - 1].kind
    }

    /// Whether an element starting now is an element of the streamed array.
    private var isStreamedElementStarting: Bool {
        openScalar == nil && !stack.isEmpty && stack[stack.count - 1].streamed
    }

    // MARK: Events from the parser

    func startElement(
        _ parser: XMLStreamParser, name: UnsafePointer<UInt8>, namespace: UnsafePointer<UInt8>?,
        attributes: XMLAttributes, at position: SourcePosition
    ) {
        let element = elementNames.element(named: name)
        if records, recorder.isRecording || isStreamedElementStarting {
            recorder.recordStart(element, name: name, at: position)
            return
        }
        start(parser, element, name: name, at: position)
    }

    func text(_ parser: XMLStreamParser, _ bytes: UnsafeBufferPointer<UInt8>) {
        if records, recorder.isRecording {
            if !recorder.recordText(bytes, from: parser) {
                problem("text longer than \(parser.limits.maximumTextBytes) bytes", at: parser.cursorPosition)
                parser.stop()
            }
            return
        }
        addText(parser, bytes)
    }

    func endElement(_ parser: XMLStreamParser) {
        if records, recorder.isRecording {
            recorder.recordEnd()
            return
        }
        end()
    }

    /// Hands over the last, partly filled batch of recorded elements.
    func finishRecording() {
        if records { recorder.deliverBatch() }
    }

    // MARK: Recorded events

    /// Builds the elements recorded in `tape`, handing each to `onStreamedElement`.
    func replay(_ tape: UnsafeRawBufferPointer) {
        var events = RecordedEventReader(tape)
        while let event = events.next() {
            switch event {
            case .start(let element, let name, let position): start(Replay(cursorPosition: position), element, name: name, at: position)
            case .text(let bytes): addText(Replay(cursorPosition: .startOfFile), bytes)
            case .misplacedText(let bytes, let position): addText(Replay(cursorPosition: position), bytes)
            case .end: end()
            }
        }
    }

    /// After the last element of a batch: a batch ends with complete elements, unless the
    /// parser stopped inside one.
    func finishReplay() {
        if stack.count != 1 || openScalar != nil { resetToStreamedArray() }
    }

    // MARK: Building

    private func start(_ source: some EventSource, _ element: PlistElement?, name: UnsafePointer<UInt8>, at position: SourcePosition) {
        if topKind == .skipped {
            stack.append(Frame(.skipped, at: position))
            return
        }
        guard let element else {
            problem("unknown property list element <\(String(cString: name))>", at: position)
            stack.append(Frame(.skipped, at: position))
            return
        }
        guard topKind != nil else {
            guard element == .plist else {
                problem("root element must be <plist>, found <\(String(cString: name))>", at: position)
                source.stop()
                return
            }
            stack.append(Frame(.plist, at: position))
            return
        }
        if let scalar = openScalar {
            problem("<\(String(cString: name))> cannot appear inside <\(scalar.kind)>", at: position)
            stack.append(Frame(.skipped, at: position))
            return
        }
        text.removeAll(keepingCapacity: true)
        switch element {
        case .plist:
            problem("<plist> can only be the root element", at: position)
            stack.append(Frame(.skipped, at: position))
        case .array:
            var frame = Frame(.array, at: position)
            frame.streamed = isStreamedArrayStarting()
            stack.append(frame)
        case .dict:
            var frame = Frame(.dictionary, at: position)
            // Product dicts have a dozen keys: grow once, not four times.
            frame.entries.reserveCapacity(16)
            stack.append(frame)
        case .key, .string, .integer, .real, .true, .false, .date, .data:
            openScalar = (element, position)
        }
    }

    /// Whether the array starting now is the value of the streamed key in the root dict.
    private func isStreamedArrayStarting() -> Bool {
        guard let streamingKey, stack.count == 2, stack[1].kind == .dictionary else { return false }
        return stack[1].pendingKey == streamingKey
    }

    private func addText(_ source: some EventSource, _ bytes: UnsafeBufferPointer<UInt8>) {
        if openScalar != nil && topKind != .skipped {
            if text.count + bytes.count > source.maximumTextBytes {
                problem("text longer than \(source.maximumTextBytes) bytes", at: source.cursorPosition)
                source.stop()
                return
            }
            text.append(contentsOf: bytes)
            return
        }
        switch topKind {
        case .skipped, nil:
            break
        default:
            if bytes.contains(where: { !isXMLWhitespace($0) }) {
                let sample = String(decoding: bytes.prefix(20), as: UTF8.self)
                    .trimmingCharacters(in: .init(charactersIn: " \t\r\n"))
                problem("unexpected text '\(sample)' between elements", at: source.cursorPosition)
            }
        }
    }

    private func end() {
        // Skipped elements close first: they may sit inside an open scalar.
        if let scalar = openScalar, topKind != .skipped {
            openScalar = nil
            endScalar(scalar.kind, at: scalar.position)
            return
        }
        guard let frame = stack.popLast() else { return }
        switch frame.kind {
        case .plist:
            return
        case .skipped:
            // The end of a skipped subtree's outermost element: it stood where a value goes,
            // unless it sat inside a scalar, which goes on.
            if topKind != .skipped && openScalar == nil { discardValue() }
            return
        case .array:
            deliver(PropertyListNode(.array(frame.items), at: frame.position))
        case .dictionary:
            if let key = frame.pendingKey {
                problem("key '\(key)' has no value", at: frame.pendingKeyPosition)
            }
            deliver(PropertyListNode(.dictionary(PropertyListDictionary(entries: frame.entries)), at: frame.position))
        }
        text.removeAll(keepingCapacity: true)
    }

    private func endScalar(_ kind: PlistElement, at position: SourcePosition) {
        if kind == .key {
            receiveKey(internedKey(), at: position)
        } else if let value = scalarValue(kind, at: position) {
            deliver(PropertyListNode(value, at: position))
        } else {
            discardValue()
        }
        text.removeAll(keepingCapacity: true)
    }

    /// The key in `text` as a String, shared with earlier equal keys: a big catalog repeats a
    /// dozen keys a million times, and keys over 15 bytes would otherwise each allocate.
    private func internedKey() -> String {
        let found: Int? = text.withUnsafeBytes { text in
            internedKeyBytes.withUnsafeBytes { bytes in
                internedKeyEnds.withUnsafeBufferPointer { ends -> Int? in
                    var start = 0
                    for (index, end) in ends.enumerated() {
                        defer { start = end }
                        if end - start == text.count
                            && (text.isEmpty || memcmp(bytes.baseAddress! + start, text.baseAddress!, text.count) == 0)
                        {
                            return index
                        }
                    }
                    return nil
                }
            }
        }
        if let found { return internedKeys[found] }
        let key = String(decoding: text, as: UTF8.self)
        if internedKeys.count < 64 {
            internedKeyBytes.append(contentsOf: text)
            internedKeyEnds.append(internedKeyBytes.count)
            internedKeys.append(key)
        }
        return key
    }

    private func scalarValue(_ kind: PlistElement, at position: SourcePosition) -> PropertyListValue? {
        let (value, message) = text.withUnsafeBufferPointer { kind.scalarValue($0) }
        if let message { problem(message, at: position) }
        return value
    }

    private func receiveKey(_ key: String, at position: SourcePosition) {
        let top = stack.count - 1
        guard top >= 0, stack[top].kind == .dictionary else {
            problem("<key> '\(key)' outside a <dict>", at: position)
            return
        }
        if let pending = stack[top].pendingKey {
            problem("key '\(pending)' has no value", at: stack[top].pendingKeyPosition)
        }
        if let first = firstPosition(of: key, inFrameAt: top) {
            problem("duplicate key '\(key)' (first at \(first))", at: position)
            stack[top].pendingKey = nil
            stack[top].dropsNextValue = true
            return
        }
        stack[top].pendingKey = key
        stack[top].pendingKeyPosition = position
    }

    /// Where `key` first appears in the dict frame at `index`, looked up in place (passing the
    /// frame would copy it, with a reference count on each of its arrays).
    private func firstPosition(of key: String, inFrameAt index: Int) -> SourcePosition? {
        if let keyIndex = stack[index].keyIndex { return keyIndex[key].map { stack[index].entries[$0].keyPosition } }
        for entry in stack[index].entries where entry.key == key { return entry.keyPosition }
        return nil
    }

    /// Hands a completed value to its container, mutating the container in place.
    private func deliver(_ node: PropertyListNode) {
        let top = stack.count - 1
        guard top >= 0 else { return }
        switch stack[top].kind {
        case .plist:
            if root == nil {
                root = node
            } else {
                problem("<plist> holds more than one value", at: node.position)
            }
        case .array:
            if stack[top].streamed {
                onStreamedElement(node)
            } else {
                stack[top].items.append(node)
            }
        case .dictionary:
            if let key = stack[top].pendingKey {
                stack[top].entries.append(.init(key: key, keyPosition: stack[top].pendingKeyPosition, value: node))
                if stack[top].keyIndex != nil {
                    stack[top].keyIndex![key] = stack[top].entries.count - 1
                } else if stack[top].entries.count > 12 {
                    stack[top].keyIndex = Dictionary(
                        stack[top].entries.enumerated().map { ($1.key, $0) }, uniquingKeysWith: { first, _ in first })
                }
                stack[top].pendingKey = nil
            } else if stack[top].dropsNextValue {
                stack[top].dropsNextValue = false
            } else {
                problem("\(node.value.kindName) in a <dict> needs a <key> before it", at: node.position)
            }
        case .skipped:
            break
        }
    }

    /// A value that was reported as invalid still uses up its dict key, so that the key is
    /// not also reported as having no value.
    private func discardValue() {
        let top = stack.count - 1
        guard top >= 0, stack[top].kind == .dictionary else { return }
        if stack[top].pendingKey != nil { stack[top].pendingKey = nil } else { stack[top].dropsNextValue = false }
    }
}
