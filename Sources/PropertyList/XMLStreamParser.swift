internal import CLibXML2

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// What a SAX pass delivers to the code that builds values from it.
protocol XMLEventHandler: AnyObject {
    func startElement(_ parser: XMLStreamParser, name: UnsafePointer<UInt8>, namespace: UnsafePointer<UInt8>?,
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
        return String(decoding: UnsafeBufferPointer(start: start, count: end - start), as: UTF8.self)
    }
}

/// One hardened SAX2 pass of libxml2 over bytes in memory.
///
/// libxml2 2.9 is not safe by default on untrusted input, so this pass: parses from memory
/// only; never enables entity substitution, DTD loading or huge-document mode; refuses every
/// external entity through a global loader (`XML_PARSE_NONET` alone does not stop `file://`);
/// stops at the first entity, element, attribute or notation declaration and at any entity
/// reference (plists have none); and bounds depth, element count and text length itself.
/// Positions are computed from byte offsets in the caller's buffer, so they are exact
/// byte columns, the way compilers count them.
final class XMLStreamParser {
    let path: String
    let limits: ReaderLimits
    private(set) var diagnostics: [Diagnostic] = []
    private(set) var depth = 0
    private var elementCount = 0
    private var context: xmlParserCtxtPtr?
    private let bytes: UnsafeBufferPointer<UInt8>
    private var readOffset = 0
    private var lines = LineTracker()
    private unowned let handler: any XMLEventHandler
    private(set) var stopped = false

    private init(path: String, bytes: UnsafeBufferPointer<UInt8>, limits: ReaderLimits, handler: any XMLEventHandler) {
        self.path = path
        self.bytes = bytes
        self.limits = limits
        self.handler = handler
    }

    /// Runs one pass over `source` and returns its diagnostics; `handler` receives the events.
    static func parse(_ source: SourceFile, limits: ReaderLimits, handler: any XMLEventHandler) -> [Diagnostic] {
        if let problem = source.formatProblem() { return [problem] }
        LibXML2.initializeOnce()
        return source.bytes.withUnsafeBufferPointer { buffer in
            let parser = XMLStreamParser(path: source.path, bytes: buffer, limits: limits, handler: handler)
            parser.run()
            return parser.diagnostics
        }
    }

    private func run() {
        var sax = xmlSAXHandler()
        sax.initialized = UInt32(XML_SAX2_MAGIC)
        sax.startElementNs = { ctx, localname, _, uri, _, _, attributeCount, _, attributes in
            guard let parser = XMLStreamParser.from(ctx), let localname else { return }
            parser.didStartElement(localname, uri, XMLAttributes(count: Int(attributeCount), raw: attributes))
        }
        sax.endElementNs = { ctx, _, _, _ in
            guard let parser = XMLStreamParser.from(ctx), !parser.stopped else { return }
            parser.depth -= 1
            parser.handler.endElement(parser)
        }
        let characters: charactersSAXFunc = { ctx, text, length in
            guard let parser = XMLStreamParser.from(ctx), !parser.stopped, let text else { return }
            parser.handler.text(parser, UnsafeBufferPointer(start: text, count: Int(length)))
        }
        sax.characters = characters
        sax.ignorableWhitespace = characters
        sax.cdataBlock = characters
        sax.serror = { ctx, error in
            guard let parser = XMLStreamParser.from(ctx), let error else { return }
            parser.didReceiveLibXMLError(error.pointee)
        }
        // Declarations and references: plists and catalog files have none, and they are what
        // billion-laughs, quadratic blow-up and external-entity attacks are made of.
        sax.entityDecl = { ctx, name, _, _, _, _ in
            XMLStreamParser.from(ctx)?.refuse("entity declarations are not allowed (entity '\(text(name))')")
        }
        sax.unparsedEntityDecl = { ctx, name, _, _, _ in
            XMLStreamParser.from(ctx)?.refuse("entity declarations are not allowed (entity '\(text(name))')")
        }
        sax.elementDecl = { ctx, name, _, _ in
            XMLStreamParser.from(ctx)?.refuse("DTD declarations are not allowed (element '\(text(name))')")
        }
        sax.attributeDecl = { ctx, element, name, _, _, _, tree in
            if let tree { xmlFreeEnumeration(tree) }  // ownership passes to the callback
            XMLStreamParser.from(ctx)?.refuse("DTD declarations are not allowed (attribute '\(text(name))' of '\(text(element))')")
        }
        sax.notationDecl = { ctx, name, _, _ in
            XMLStreamParser.from(ctx)?.refuse("DTD declarations are not allowed (notation '\(text(name))')")
        }
        sax.reference = { ctx, name in
            XMLStreamParser.from(ctx)?.refuse("entity references are not allowed ('&\(text(name));')")
        }
        sax.getEntity = { ctx, name in
            XMLStreamParser.from(ctx)?.refuse("entity references are not allowed ('&\(text(name));')")
            return nil
        }
        sax.getParameterEntity = { ctx, name in
            XMLStreamParser.from(ctx)?.refuse("parameter entities are not allowed ('%\(text(name));')")
            return nil
        }
        sax.resolveEntity = { ctx, _, systemID in
            XMLStreamParser.from(ctx)?.refuse("external entities are not loaded ('\(text(systemID))')")
            return nil
        }
        // internalSubset and externalSubset stay nil: the DOCTYPE line is accepted and nothing is fetched.

        let me = Unmanaged.passUnretained(self).toOpaque()
        let read: xmlInputReadCallback = { ioContext, buffer, length in
            guard let ioContext, let buffer else { return -1 }
            let parser = Unmanaged<XMLStreamParser>.fromOpaque(ioContext).takeUnretainedValue()
            let count = min(Int(length), parser.bytes.count - parser.readOffset)
            if count > 0 {
                UnsafeMutableRawPointer(buffer).copyMemory(
                    from: parser.bytes.baseAddress! + parser.readOffset, byteCount: count)
                parser.readOffset += count
            }
            return Int32(count)
        }
        // Reading through a callback from our buffer, rather than xmlCreateMemoryParserCtxt,
        // spares libxml2's copy of the whole file.
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
            diagnostics.append(.error("malformed XML", file: path, at: position(ofOffset: readOffset)))
        }
    }

    private static func from(_ ctx: UnsafeMutableRawPointer?) -> XMLStreamParser? {
        guard let ctx else { return nil }
        let context = ctx.assumingMemoryBound(to: xmlParserCtxt.self)
        guard let me = context.pointee._private else { return nil }
        return Unmanaged<XMLStreamParser>.fromOpaque(me).takeUnretainedValue()
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

    /// libxml2 calls back with the cursor at the end of the start tag; its `<` is the last one before.
    private func startTagPosition() -> SourcePosition {
        guard let context else { return .startOfFile }
        var offset = min(clibxml2_cursor_offset(context), bytes.count)
        while offset > 0 {
            offset -= 1
            if bytes[offset] == UInt8(ascii: "<") { break }
        }
        return position(ofOffset: offset)
    }

    private func position(ofOffset offset: Int) -> SourcePosition {
        lines.position(ofOffset: max(0, min(offset, bytes.count)), in: bytes)
    }

    /// The position of libxml2's cursor, for problems found in text rather than at a tag.
    var cursorPosition: SourcePosition {
        guard let context else { return .startOfFile }
        return position(ofOffset: clibxml2_cursor_offset(context))
    }

    private func didReceiveLibXMLError(_ error: xmlError) {
        // Warnings (such as a relative namespace URI) do not make a document unusable.
        guard error.level.rawValue >= XML_ERR_ERROR.rawValue, !stopped else { return }
        var message = error.message.map { String(cString: $0) } ?? "malformed XML"
        while message.last?.isWhitespace == true { message.removeLast() }
        let at: SourcePosition
        if let context, clibxml2_cursor_offset(context) >= 0 {
            at = cursorPosition
        } else {
            at = SourcePosition(line: Int(error.line), column: Int(error.int2))
        }
        fail(message, at: at)
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

/// Maps byte offsets to lines and columns, moving forward (the common case) or back through the buffer.
private struct LineTracker {
    private var offset = 0
    private var line = 1
    private var lineStart = 0

    mutating func position(ofOffset target: Int, in bytes: UnsafeBufferPointer<UInt8>) -> SourcePosition {
        guard let base = bytes.baseAddress else { return .startOfFile }
        if target >= offset {
            var cursor = offset
            while cursor < target, let found = memchr(base + cursor, 0x0A, target - cursor) {
                let newline = UnsafePointer<UInt8>(found.assumingMemoryBound(to: UInt8.self)) - base
                line += 1
                lineStart = newline + 1
                cursor = newline + 1
            }
        } else {
            for index in target..<offset where bytes[index] == 0x0A { line -= 1 }
            var start = target
            while start > 0 && bytes[start - 1] != 0x0A { start -= 1 }
            lineStart = start
        }
        offset = target
        return SourcePosition(line: line, column: target - lineStart + 1)
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
