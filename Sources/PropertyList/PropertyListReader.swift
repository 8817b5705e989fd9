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
    public internal(set) var count: Int
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
protocol EventSource {
    var maximumTextBytes: Int { get }
    /// Where the text being delivered is, for a problem found in it.
    var cursorPosition: SourcePosition { get }
    func stop()
}

extension XMLStreamParser: EventSource {
    var maximumTextBytes: Int { limits.maximumTextBytes }
}

/// A recorded text event: the recorder already enforced the limit, and stopping is moot.
struct Replay: EventSource {
    var cursorPosition: SourcePosition
    var maximumTextBytes: Int { .max }
    func stop() {}
}
