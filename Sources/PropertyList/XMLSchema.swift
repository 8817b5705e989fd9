internal import CLibXML2

/// A compiled W3C XML Schema (XSD 1.0) that validates documents with libxml2.
///
/// `@unchecked Sendable`: the compiled schema is never mutated after `init`, and libxml2
/// documents a parsed schema as shareable between threads as long as each validation uses
/// its own validation context, which ``validate(_:)`` creates per call.
public final class XMLSchema: @unchecked Sendable {
    private let schema: xmlSchemaPtr

    /// Why a schema could not be compiled.
    public struct CompileError: Error, CustomStringConvertible {
        public var messages: [String]
        public var description: String { "invalid XML schema: " + messages.joined(separator: "; ") }
    }

    public init(bytes: [UInt8]) throws {
        LibXML2.initializeOnce()
        let collector = MessageCollector()
        guard !bytes.isEmpty else { throw CompileError(messages: ["the schema is empty"]) }
        let compiled: xmlSchemaPtr? = bytes.withUnsafeBufferPointer { buffer in
            buffer.baseAddress!.withMemoryRebound(to: CChar.self, capacity: buffer.count) { pointer in
                guard let context = xmlSchemaNewMemParserCtxt(pointer, Int32(buffer.count)) else { return nil }
                defer { xmlSchemaFreeParserCtxt(context) }
                xmlSchemaSetParserStructuredErrors(context, collectMessage, Unmanaged.passUnretained(collector).toOpaque())
                return xmlSchemaParse(context)
            }
        }
        guard let compiled else {
            throw CompileError(messages: collector.messages.map(\.text))
        }
        schema = compiled
    }

    deinit {
        xmlSchemaFree(schema)
    }

    /// Validates a document that already passed the hardened reader (it has no entities or DTD)
    /// and returns one error per schema violation.
    ///
    /// libxml2 reports lines, not columns, for schema errors, so each diagnostic points at
    /// the first non-blank column of its line, which is where the offending tag starts in any
    /// reasonably formatted file.
    public func validate(_ source: SourceFile) -> [Diagnostic] {
        let bytes: [UInt8]
        do {
            bytes = try source.contents()
        } catch {
            return [error]
        }
        guard !bytes.isEmpty else { return [.error("file is empty", file: source.path, at: .startOfFile)] }
        let collector = MessageCollector()
        let options = Int32(
            XML_PARSE_NONET.rawValue | XML_PARSE_IGNORE_ENC.rawValue
                | XML_PARSE_NOERROR.rawValue | XML_PARSE_NOWARNING.rawValue)
        let document: xmlDocPtr? = bytes.withUnsafeBufferPointer { buffer in
            buffer.baseAddress!.withMemoryRebound(to: CChar.self, capacity: buffer.count) {
                xmlReadMemory($0, Int32(buffer.count), nil, "UTF-8", options)
            }
        }
        guard let document else {
            return [.error("malformed XML", file: source.path, at: .startOfFile)]
        }
        defer { xmlFreeDoc(document) }
        guard let context = xmlSchemaNewValidCtxt(schema) else {
            return [.error("cannot create a schema validator", file: source.path, at: .startOfFile)]
        }
        defer { xmlSchemaFreeValidCtxt(context) }
        xmlSchemaSetValidStructuredErrors(context, collectMessage, Unmanaged.passUnretained(collector).toOpaque())
        _ = xmlSchemaValidateDoc(context, document)
        return collector.messages.map { message in
            let line = max(1, message.line)
            return .error(
                message.text, file: source.path,
                at: SourcePosition(line: line, column: firstNonBlankColumn(line: line, in: bytes)))
        }
    }
}

private final class MessageCollector {
    var messages: [(text: String, line: Int)] = []
}

private let collectMessage: xmlStructuredErrorFunc = { context, error in
    guard let context, let error, error.pointee.level.rawValue >= XML_ERR_ERROR.rawValue else { return }
    let collector = Unmanaged<MessageCollector>.fromOpaque(context).takeUnretainedValue()
    var text = error.pointee.message.map { String(cString: $0) } ?? "schema violation"
    while text.last?.isWhitespace == true { text.removeLast() }
    collector.messages.append((readable(text), Int(error.pointee.line)))
}

/// libxml2 writes qualified names as `{urn:…}product`; editors think of `product`.
private func readable(_ message: String) -> String {
    var result = ""
    var inBraces = false
    for character in message {
        if character == "{" {
            inBraces = true
        } else if character == "}" && inBraces {
            inBraces = false
        } else if !inBraces {
            result.append(character)
        }
    }
    return result
}

private func firstNonBlankColumn(line: Int, in bytes: [UInt8]) -> Int {
    var currentLine = 1
    var index = 0
    while currentLine < line, index < bytes.count {
        if bytes[index] == 0x0A { currentLine += 1 }
        index += 1
    }
    var column = 1
    while index < bytes.count, bytes[index] == 0x20 || bytes[index] == 0x09 {
        index += 1
        column += 1
    }
    return column
}
