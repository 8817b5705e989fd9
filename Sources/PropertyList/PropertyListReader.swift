internal import CLibXML2

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Reads Apple XML property lists into ``PropertyListNode`` values that remember their source positions.
///
/// A streaming SAX2 pass, not a DOM. For big files, the elements of one top-level array
/// (say the `products` of a root dict) can be handed to the caller one by one as they
/// complete, so the whole tree never exists in memory at once.
public struct PropertyListReader: Sendable {
    public var limits: ReaderLimits

    public init(limits: ReaderLimits = ReaderLimits()) {
        self.limits = limits
    }

    /// The outcome of reading one file: its root value, if it was readable, and every problem found.
    public struct Result: Sendable {
        public var root: PropertyListNode?
        public var diagnostics: [Diagnostic]
    }

    /// Reads a whole property list.
    public func read(_ source: SourceFile) -> Result {
        read(source, streamingArray: nil, batchesOf: 1) { _ in }
    }

    /// Reads a property list, handing the elements of the array at `key` of the root dict to
    /// `element` as each completes instead of keeping them; that array appears empty in the result.
    public func read(
        _ source: SourceFile, streamingArray key: String, element: (PropertyListNode) -> Void
    ) -> Result {
        let builder = RecordedElementBuilder(path: source.path)
        var built: [Diagnostic] = []
        var result = read(source, streamingArray: key, batchesOf: 64) { batch in
            built += builder.build(batch, element)
        }
        result.diagnostics = (result.diagnostics + built).sorted()
        return result
    }

    /// Reads a property list, recording the elements of the array at `key` of the root dict
    /// and handing them to `batch` a few at a time, in order, instead of building them: a
    /// ``RecordedElementBuilder`` builds them, on another thread if the caller likes, while
    /// this one reads on. That array appears empty in the result; problems inside its elements
    /// are reported by the builder, not here.
    public func read(
        _ source: SourceFile, streamingArray key: String?, batchesOf size: Int, _ batch: (RecordedElements) -> Void
    ) -> Result {
        withoutActuallyEscaping(batch) { batch in
            let builder = PropertyListBuilder(
                context: .document, streaming: key.map { ($0, ElementRecorder(batchSize: size, deliver: batch)) })
            var diagnostics = XMLStreamParser.parse(source, limits: limits, handler: builder)
            builder.finishRecording()
            diagnostics += builder.takeProblems(file: source.path)
            if builder.root == nil && !diagnostics.containsErrors {
                diagnostics.append(.error("no property list found", file: source.path, at: .startOfFile))
            }
            diagnostics.sort()
            return Result(
                root: diagnostics.containsErrors && builder.root == nil ? nil : builder.root,
                diagnostics: diagnostics)
        }
    }
}

/// Elements of a streamed array as the parser met them: their start tags, value text and end
/// tags in one flat buffer, with the source positions diagnostics need. Recording is a few
/// copies per element; building values from it (allocating strings, arrays and dicts) is most
/// of the work of reading, and can run on another core.
public struct RecordedElements: Sendable {
    var tape: ByteTape
    /// How many complete elements the batch holds.
    public fileprivate(set) var count: Int
}

/// Builds ``RecordedElements`` into values with the same checks, and the same diagnostics, as
/// reading them in place. Not thread-safe: use one per thread, reused across batches (it keeps
/// the dict keys it has met, so that each key string is allocated once).
public final class RecordedElementBuilder {
    private let path: String
    private let builder = PropertyListBuilder(context: .streamedElements, streaming: nil)
    private let plainState = PlainReadState()

    public init(path: String) {
        self.path = path
    }

    /// Calls `element` with each complete element of `batch`, in order; returns the problems found in them.
    ///
    /// With `readingPlain`, each element is first offered to it, in place: it returns true when
    /// it took the element, which it must then have read to the end. An element it does not
    /// take, or that is not plain, is built and handed to `element`.
    public func build(
        _ batch: RecordedElements, readingPlain plain: ((inout PlainElementCursor) -> Bool)? = nil,
        _ element: (PropertyListNode) -> Void
    ) -> [Diagnostic] {
        withoutActuallyEscaping(element) { element in
            builder.onStreamedElement = element
            defer { builder.onStreamedElement = { _ in } }
            batch.tape.withUnsafeBytes { tape in
                guard let plain else { return builder.replay(tape) }
                var start = 0
                while start < tape.count {
                    var cursor = PlainElementCursor(tape, from: start, state: plainState)
                    if plain(&cursor) {
                        precondition(cursor.isFinished, "an element was taken before its end")
                        start = cursor.offset
                        continue
                    }
                    var element = RecordedEventReader(tape, from: start)
                    element.skipElement()
                    builder.replay(UnsafeRawBufferPointer(rebasing: tape[start..<element.offset]))
                    start = element.offset
                }
            }
            builder.finishReplay()
            return builder.takeProblems(file: path)
        }
    }
}

/// Where the builder's events come from, for what it asks of them: limits, the position of
/// text, and stopping.
private protocol EventSource {
    var maximumTextBytes: Int { get }
    /// Where the text being delivered is, for a problem found in it.
    var cursorPosition: SourcePosition { get }
    func stop()
}

extension XMLStreamParser: EventSource {
    var maximumTextBytes: Int { limits.maximumTextBytes }
}

/// A recorded text event: the recorder already enforced the limit, and stopping is moot.
private struct Replay: EventSource {
    var cursorPosition: SourcePosition
    var maximumTextBytes: Int { .max }
    func stop() {}
}

/// The element names of the plist format.
enum PlistElement: UInt8, CaseIterable {
    case plist, dict, array, key, string, integer, real, `true`, `false`, date, data

    var isScalar: Bool {
        switch self {
        case .plist, .dict, .array: false
        case .key, .string, .integer, .real, .true, .false, .date, .data: true
        }
    }

    /// The element name as a C string, for replayed events. A literal per case, not a table of
    /// arrays: reading an array out of a table costs a reference count on every replayed element.
    var cName: StaticString {
        switch self {
        case .plist: "plist"
        case .dict: "dict"
        case .array: "array"
        case .key: "key"
        case .string: "string"
        case .integer: "integer"
        case .real: "real"
        case .true: "true"
        case .false: "false"
        case .date: "date"
        case .data: "data"
        }
    }

    /// The value of a scalar element with this text, or the problem with it: one definition
    /// for the builder and for reading plain elements in place (``PlainElementCursor``).
    func scalarValue(_ text: UnsafeBufferPointer<UInt8>) -> (value: PropertyListValue?, problem: String?) {
        switch self {
        case .string:
            return (.string(String(decoding: text, as: UTF8.self)), nil)
        case .integer:
            guard let value = parseInteger(text) else { return (nil, integerProblem(text)) }
            return (.integer(value), nil)
        case .real:
            let literal = trimmed(text)
            guard !literal.isEmpty, let value = Double(literal) else { return (nil, "'\(literal)' is not a valid <real>") }
            return (.real(value), nil)
        case .true, .false:
            guard text.allSatisfy(isXMLWhitespace) else { return (nil, "<\(self)/> must be empty") }
            return (.boolean(self == .true), nil)
        case .date:
            let literal = trimmed(text)
            guard let date = Timestamp(iso8601: literal) else {
                return (nil, "'\(literal)' is not a valid <date>; expected YYYY-MM-DDTHH:MM:SSZ")
            }
            return (.date(date), nil)
        case .data:
            guard let bytes = Base64.decode(text) else { return (nil, "<data> is not valid base64") }
            return (.data(bytes), nil)
        case .key, .array, .dict, .plist:
            return (nil, nil)
        }
    }

    private func integerProblem(_ text: UnsafeBufferPointer<UInt8>) -> String {
        let literal = trimmed(text)
        let isNumeral =
            !literal.isEmpty && literal.drop { $0 == "-" || $0 == "+" }.allSatisfy(\.isASCIIDigit)
            && literal.contains(where: \.isASCIIDigit)
        return isNumeral
            ? "integer \(literal) does not fit in 64 bits"
            : "'\(literal)' is not a valid <integer>"
    }

    init?(_ name: UnsafePointer<UInt8>) {
        // Compare raw bytes: this runs for every element of files with millions of them.
        func equals(_ literal: StaticString) -> Bool {
            strcmp(
                UnsafeRawPointer(name).assumingMemoryBound(to: CChar.self),
                UnsafeRawPointer(literal.utf8Start).assumingMemoryBound(to: CChar.self)) == 0
        }
        switch name[0] {
        case UInt8(ascii: "k") where equals("key"): self = .key
        case UInt8(ascii: "s") where equals("string"): self = .string
        case UInt8(ascii: "i") where equals("integer"): self = .integer
        case UInt8(ascii: "d") where equals("dict"): self = .dict
        case UInt8(ascii: "d") where equals("date"): self = .date
        case UInt8(ascii: "d") where equals("data"): self = .data
        case UInt8(ascii: "a") where equals("array"): self = .array
        case UInt8(ascii: "r") where equals("real"): self = .real
        case UInt8(ascii: "t") where equals("true"): self = .true
        case UInt8(ascii: "f") where equals("false"): self = .false
        case UInt8(ascii: "p") where equals("plist"): self = .plist
        default: return nil
        }
    }
}

/// Element kinds by the address of their name. libxml2 interns element names in its parser's
/// dictionary, where they stay until the parse ends: during one parse, a name keeps one
/// address and no other string takes it. Most start tags then need no string comparison;
/// an address not seen yet is compared by bytes. One cache per parse.
struct ElementNameCache {
    /// The name address of each kind seen so far, by raw value.
    private var addresses = [UnsafePointer<UInt8>?](repeating: nil, count: PlistElement.allCases.count)

    mutating func element(named name: UnsafePointer<UInt8>) -> PlistElement? {
        for index in addresses.indices where addresses[index] == name { return PlistElement(rawValue: UInt8(index)) }
        guard let element = PlistElement(name) else { return nil }
        addresses[Int(element.rawValue)] = name
        return element
    }
}

/// Builds values from SAX events with an explicit stack: no recursion, so depth costs no stack.
///
/// Frames are plain structs mutated in place at the top of the stack, and dict keys are
/// interned: this runs for every element of files with millions of them. When reading with a
/// streamed array, the elements of that array are recorded (``ElementRecorder``) rather than
/// built, and another builder, in the `streamedElements` context, replays them.
private final class PropertyListBuilder: XMLEventHandler {
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

func isXMLWhitespace(_ byte: UInt8) -> Bool {
    byte == 0x20 || byte == 0x0A || byte == 0x09 || byte == 0x0D
}

/// `bytes` without XML whitespace at either end.
private func trimmedSlice(_ bytes: UnsafeBufferPointer<UInt8>) -> Slice<UnsafeBufferPointer<UInt8>> {
    var slice = bytes[...]
    while let first = slice.first, isXMLWhitespace(first) { slice = slice.dropFirst() }
    while let last = slice.last, isXMLWhitespace(last) { slice = slice.dropLast() }
    return slice
}

private func trimmed(_ bytes: UnsafeBufferPointer<UInt8>) -> String {
    String(decoding: trimmedSlice(bytes), as: UTF8.self)
}

/// A decimal integer with optional sign and surrounding whitespace, or nil (including on overflow).
private func parseInteger(_ bytes: UnsafeBufferPointer<UInt8>) -> Int64? {
    var slice = trimmedSlice(bytes)
    var negative = false
    if let sign = slice.first, sign == UInt8(ascii: "-") || sign == UInt8(ascii: "+") {
        negative = sign == UInt8(ascii: "-")
        slice = slice.dropFirst()
    }
    guard !slice.isEmpty else { return nil }
    var value: Int64 = 0
    for byte in slice {
        guard byte >= 48 && byte <= 57 else { return nil }
        let digit = Int64(byte - 48)
        // Accumulate negatively so that Int64.min parses.
        let (shifted, overflow1) = value.multipliedReportingOverflow(by: 10)
        let (next, overflow2) = shifted.subtractingReportingOverflow(digit)
        if overflow1 || overflow2 { return nil }
        value = next
    }
    if negative { return value }
    let (positive, overflow) = Int64(0).subtractingReportingOverflow(value)
    return overflow ? nil : positive
}

extension Character {
    fileprivate var isASCIIDigit: Bool { isASCII && isNumber }
}
