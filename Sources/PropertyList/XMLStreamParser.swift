internal import CLibXML2
import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// What a SAX pass delivers to the code that builds values from it.
protocol XMLEventHandler: AnyObject {
    func startElement(
        _ parser: XMLStreamParser, name: UnsafePointer<UInt8>, namespace: UnsafePointer<UInt8>?,
        attributes: XMLAttributes, at position: SourcePosition)
    func endElement(_ parser: XMLStreamParser)
    func text(_ parser: XMLStreamParser, _ bytes: UnsafeBufferPointer<UInt8>)
}

/// The attributes of a start tag, as libxml2's SAX2 hands them over (five pointers each).
struct XMLAttributes {
    let count: Int
    let raw: UnsafeMutablePointer<UnsafePointer<xmlChar>?>?

    func name(_ index: Int) -> String { String(cString: raw![index * 5]!) }

    func value(_ index: Int) -> String {
        let start = raw![index * 5 + 3]!
        let end = raw![index * 5 + 4]!
        let value = String(decoding: UnsafeBufferPointer(start: start, count: end - start), as: UTF8.self)
        // Without entity substitution (never enabled, see XMLStreamParser), libxml2 keeps an
        // ampersand in an attribute value, from `&amp;` or `&#38;`, as the text `&#38;`; every
        // other reference arrives decoded.
        return value.contains("&#38;") ? value.replacingOccurrences(of: "&#38;", with: "&") : value
    }
}

/// One hardened SAX2 pass of libxml2 over a source file.
///
/// libxml2 2.9 is not safe by default on untrusted input, so this pass: parses from memory
/// only; never enables entity substitution, DTD loading or huge-document mode; refuses every
/// external entity through a global loader (`XML_PARSE_NONET` alone does not stop `file://`);
/// stops at the first entity, element, attribute or notation declaration and at any entity
/// reference (plists have none); and bounds depth, element count and text length itself.
/// Positions are exact byte columns, the way compilers count them, computed from libxml2's
/// input window and line count at each start tag.
final class XMLStreamParser {
    let path: String
    let limits: ReaderLimits
    private(set) var diagnostics: [Diagnostic] = []
    // Hot, single-threaded state: see PropertyListBuilder on exclusivity checks.
    @exclusivity(unchecked) private(set) var depth = 0
    @exclusivity(unchecked) private var elementCount = 0
    @exclusivity(unchecked) private var context: xmlParserCtxtPtr?
    private var input: InputStream
    // A plain strong reference, guaranteed by `self` in each callback: held unowned(unsafe),
    // it was retained and released around every call, a quarter of the parsing thread's time.
    private let handler: any XMLEventHandler
    @exclusivity(unchecked) private(set) var stopped = false

    private init(path: String, input: InputStream, limits: ReaderLimits, handler: any XMLEventHandler) {
        self.path = path
        self.input = input
        self.limits = limits
        self.handler = handler
    }

    /// Runs one pass over `source` and returns its diagnostics; `handler` receives the events.
    static func parse(_ source: SourceFile, limits: ReaderLimits, handler: any XMLEventHandler) -> [Diagnostic] {
        if let problem = source.formatProblem() { return [problem] }
        LibXML2.initializeOnce()
        let input: InputStream
        switch source.storage {
        case .bytes(let bytes):
            input = InputStream(bytes: bytes)
        case .file(let url, let maximumBytes):
            let descriptor = open(url.path, O_RDONLY | O_CLOEXEC)
            guard descriptor >= 0 else { return [.error("cannot open file", file: source.path, at: .startOfFile)] }
            input = InputStream(descriptor: descriptor, maximumBytes: maximumBytes)
        }
        let parser = XMLStreamParser(path: source.path, input: input, limits: limits, handler: handler)
        defer { parser.input.close() }
        withExtendedLifetime(handler) { parser.run() }
        return parser.diagnostics
    }

    private func run() {
        var sax = xmlSAXHandler()
        sax.initialized = UInt32(XML_SAX2_MAGIC)
        sax.startElementNs = { ctx, localname, _, uri, _, _, attributeCount, _, attributes in
            guard let localname else { return }
            XMLStreamParser.with(ctx) { parser in
                parser.didStartElement(localname, uri, XMLAttributes(count: Int(attributeCount), raw: attributes))
            }
        }
        sax.endElementNs = { ctx, _, _, _ in
            XMLStreamParser.with(ctx) { parser in
                guard !parser.stopped else { return }
                parser.depth -= 1
                parser.handler.endElement(parser)
            }
        }
        let characters: charactersSAXFunc = { ctx, text, length in
            guard let text else { return }
            XMLStreamParser.with(ctx) { parser in
                guard !parser.stopped else { return }
                parser.handler.text(parser, UnsafeBufferPointer(start: text, count: Int(length)))
            }
        }
        sax.characters = characters
        sax.ignorableWhitespace = characters
        sax.cdataBlock = characters
        sax.serror = { ctx, error in
            guard let error else { return }
            XMLStreamParser.with(ctx) { $0.didReceiveLibXMLError(error.pointee) }
        }
        // Declarations and references: plists and catalog files have none, and they are what
        // billion-laughs, quadratic blow-up and external-entity attacks are made of.
        sax.entityDecl = { ctx, name, _, _, _, _ in
            XMLStreamParser.with(ctx) { $0.refuse("entity declarations are not allowed (entity '\(text(name))')") }
        }
        sax.unparsedEntityDecl = { ctx, name, _, _, _ in
            XMLStreamParser.with(ctx) { $0.refuse("entity declarations are not allowed (entity '\(text(name))')") }
        }
        sax.elementDecl = { ctx, name, _, _ in
            XMLStreamParser.with(ctx) { $0.refuse("DTD declarations are not allowed (element '\(text(name))')") }
        }
        sax.attributeDecl = { ctx, element, name, _, _, _, tree in
            if let tree { xmlFreeEnumeration(tree) }  // ownership passes to the callback
            XMLStreamParser.with(ctx) { $0.refuse("DTD declarations are not allowed (attribute '\(text(name))' of '\(text(element))')") }
        }
        sax.notationDecl = { ctx, name, _, _ in
            XMLStreamParser.with(ctx) { $0.refuse("DTD declarations are not allowed (notation '\(text(name))')") }
        }
        sax.reference = { ctx, name in
            XMLStreamParser.with(ctx) { $0.refuse("entity references are not allowed ('&\(text(name));')") }
        }
        sax.getEntity = { ctx, name in
            XMLStreamParser.with(ctx) { $0.refuse("entity references are not allowed ('&\(text(name));')") }
            return nil
        }
        sax.getParameterEntity = { ctx, name in
            XMLStreamParser.with(ctx) { $0.refuse("parameter entities are not allowed ('%\(text(name));')") }
            return nil
        }
        sax.resolveEntity = { ctx, _, systemID in
            XMLStreamParser.with(ctx) { $0.refuse("external entities are not loaded ('\(text(systemID))')") }
            return nil
        }
        // internalSubset and externalSubset stay nil: the DOCTYPE line is accepted and nothing is fetched.

        let me = Unmanaged.passUnretained(self).toOpaque()
        let read: xmlInputReadCallback = { ioContext, buffer, length in
            guard let ioContext, let buffer else { return -1 }
            let parser = Unmanaged<XMLStreamParser>.fromOpaque(ioContext).takeUnretainedValue()
            let count = parser.input.read(into: UnsafeMutableRawPointer(buffer), count: Int(length))
            if count < 0 && !parser.stopped {
                parser.fail(parser.input.failure ?? "cannot read file", at: .startOfFile)
                parser.stopped = true
            }
            return Int32(count)
        }
        // libxml2 pulls the input through this callback in small chunks: it never opens the file
        // itself, never sees more than the size cap, and never holds the whole file.
        guard let context = xmlCreateIOParserCtxt(&sax, nil, read, nil, me, XML_CHAR_ENCODING_UTF8) else {
            diagnostics.append(.error("cannot create an XML parser", file: path, at: .startOfFile))
            return
        }
        self.context = context
        defer {
            self.context = nil
            xmlFreeParserCtxt(context)
        }
        context.pointee._private = me
        xmlCtxtUseOptions(context, Int32(XML_PARSE_NONET.rawValue | XML_PARSE_IGNORE_ENC.rawValue))
        _ = xmlParseDocument(context)
        if !stopped && context.pointee.wellFormed == 0 && !diagnostics.containsErrors {
            diagnostics.append(.error("malformed XML", file: path, at: cursorPosition))
        }
    }

    /// Runs `body` with the parser behind a callback's context, without reference counting:
    /// the hot callbacks run millions of times, and `parse` keeps the parser alive throughout.
    private static func with(_ ctx: UnsafeMutableRawPointer?, _ body: (XMLStreamParser) -> Void) {
        guard let ctx else { return }
        let context = ctx.assumingMemoryBound(to: xmlParserCtxt.self)
        guard let me = context.pointee._private else { return }
        Unmanaged<XMLStreamParser>.fromOpaque(me)._withUnsafeGuaranteedRef(body)
    }

    private func didStartElement(_ name: UnsafePointer<xmlChar>, _ uri: UnsafePointer<xmlChar>?, _ attributes: XMLAttributes) {
        guard !stopped else { return }
        let position = startTagPosition()
        depth += 1
        elementCount += 1
        if depth > limits.maximumDepth {
            fail("elements nest deeper than \(limits.maximumDepth) levels", at: position)
            stop()
            return
        }
        if elementCount > limits.maximumElements {
            fail("document has more than \(limits.maximumElements) elements", at: position)
            stop()
            return
        }
        for index in 0..<attributes.count {
            let start = attributes.raw![index * 5 + 3]!
            let end = attributes.raw![index * 5 + 4]!
            if end - start > limits.maximumTextBytes {
                fail("attribute value longer than \(limits.maximumTextBytes) bytes", at: position)
                stop()
                return
            }
        }
        handler.startElement(self, name: name, namespace: uri, attributes: attributes, at: position)
    }

    /// libxml2 calls back with the cursor at the end of the start tag; its `<` is the last one
    /// before, and the whole tag is still in libxml2's input window (attributes point into it).
    private func startTagPosition() -> SourcePosition {
        guard let context, let input = context.pointee.input, let base = input.pointee.base,
            let cursor = input.pointee.cur
        else { return .startOfFile }
        var tag = cursor
        while tag > base && tag.pointee != UInt8(ascii: "<") { tag -= 1 }
        var newlines = 0
        var scan = tag
        while scan < cursor {
            if scan.pointee == 0x0A { newlines += 1 }
            scan += 1
        }
        return position(
            at: tag, line: Int(input.pointee.line) - newlines, base: base, fallbackColumn: Int(input.pointee.col) - (cursor - tag))
    }

    /// The position of libxml2's cursor, for problems found in text rather than at a tag.
    var cursorPosition: SourcePosition {
        guard let context, let input = context.pointee.input, let base = input.pointee.base,
            let cursor = input.pointee.cur
        else { return .startOfFile }
        return position(at: cursor, line: Int(input.pointee.line), base: base, fallbackColumn: Int(input.pointee.col))
    }

    /// Byte column of `pointer`: the distance to the previous newline in the window, or
    /// libxml2's own (character) column when the line began before the window.
    private func position(at pointer: UnsafePointer<xmlChar>, line: Int, base: UnsafePointer<xmlChar>, fallbackColumn: Int)
        -> SourcePosition
    {
        var lineStart = pointer
        while lineStart > base && (lineStart - 1).pointee != 0x0A { lineStart -= 1 }
        let startsInWindow = lineStart > base || clibxml2_input_starts_at_beginning(context) != 0
        let column = startsInWindow ? pointer - lineStart + 1 : max(1, fallbackColumn)
        return SourcePosition(line: max(1, line), column: column)
    }

    private func didReceiveLibXMLError(_ error: xmlError) {
        // Warnings (such as a relative namespace URI) do not make a document unusable.
        guard error.level.rawValue >= XML_ERR_ERROR.rawValue, !stopped else { return }
        var message = error.message.map { String(cString: $0) } ?? "malformed XML"
        while message.last?.isWhitespace == true { message.removeLast() }
        fail(message, at: context == nil ? SourcePosition(line: Int(error.line), column: Int(error.int2)) : cursorPosition)
        if error.level == XML_ERR_FATAL { stop() }
    }

    /// Records an error at the cursor and stops: used for constructs that are never allowed.
    private func refuse(_ message: String) {
        guard !stopped else { return }
        fail(message, at: cursorPosition)
        stop()
    }

    /// Records an error; parsing goes on so that one run reports every problem it can.
    func fail(_ message: String, at position: SourcePosition) {
        diagnostics.append(.error(message, file: path, at: position))
    }

    func warn(_ message: String, at position: SourcePosition) {
        diagnostics.append(.warning(message, file: path, at: position))
    }

    /// Ends the pass: no further events reach the handler.
    func stop() {
        guard !stopped else { return }
        stopped = true
        if let context { xmlStopParser(context) }
    }
}

/// Where libxml2 pulls its input from: bytes in memory, or a file read 64 KiB at a time.
/// libxml2 asks for 4000 bytes per call; a system call for each was about a tenth of the
/// parsing thread's time on a big catalog. A bigger chunk than 64 KiB made the kernel's copy
/// slower than the calls it saved: it no longer stayed in the core's cache until libxml2 read it.
private struct InputStream {
    /// Bytes not yet handed to libxml2 are `buffer[start..<end]`.
    private var buffer: [UInt8]
    private var start = 0
    private var end: Int
    /// nil for input from memory, and once closed.
    private var descriptor: Int32?
    /// Bytes the size cap still allows; negative once the file grew past it while being read.
    private var remaining: Int

    private static let chunkBytes = 1 << 16

    init(bytes: [UInt8]) {
        buffer = bytes
        end = bytes.count
        remaining = 0
    }

    init(descriptor: Int32, maximumBytes: Int) {
        // Uninitialized: the pages a small file never reaches take no memory.
        buffer = [UInt8](unsafeUninitializedCapacity: Self.chunkBytes) { $1 = Self.chunkBytes }
        end = 0
        self.descriptor = descriptor
        remaining = maximumBytes
    }

    var failure: String? {
        remaining < 0 ? "file grew past the size limit while being read" : nil
    }

    /// Copies up to `count` bytes into `destination`; 0 at the end, -1 on error.
    mutating func read(into destination: UnsafeMutableRawPointer, count: Int) -> Int {
        if start == end {
            guard let descriptor, remaining >= 0 else { return 0 }
            var result: Int
            repeat {
                result = buffer.withUnsafeMutableBytes { Glibc.read(descriptor, $0.baseAddress, $0.count) }
            } while result < 0 && errno == EINTR
            guard result >= 0 else { return -1 }
            // The size was checked when the file was opened; a file growing since is refused too.
            if result > remaining {
                remaining = -1
                return -1
            }
            remaining -= result
            start = 0
            end = result
        }
        let available = min(count, end - start)
        buffer.withUnsafeBytes { destination.copyMemory(from: $0.baseAddress! + start, byteCount: available) }
        start += available
        return available
    }

    mutating func close() {
        if let descriptor { Glibc.close(descriptor) }
        descriptor = nil
        start = end
    }
}

private func text(_ pointer: UnsafePointer<xmlChar>?) -> String {
    pointer.map { String(cString: $0) } ?? ""
}

/// Process-wide libxml2 setup, done once before the first parse.
enum LibXML2 {
    private static let initialized: Bool = {
        xmlInitParser()
        // Every external resource is refused, whatever parser asks: XML_PARSE_NONET does not
        // cover file:// URLs or parameter entities in libxml2 2.9.
        xmlSetExternalEntityLoader { _, _, _ in nil }
        return true
    }()

    static func initializeOnce() {
        _ = initialized
    }
}
