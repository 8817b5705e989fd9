/// An element of a small XML document, with the place its start tag begins.
public struct XMLElement: Sendable {
    public var name: String
    public var namespace: String?
    public var attributes: [(name: String, value: String)]
    public var children: [XMLElement]
    /// The element's own text, concatenated (mixed content is not part of the dialects read here).
    public var text: String
    public var position: SourcePosition

    public func attribute(_ name: String) -> String? {
        attributes.first { $0.name == name }?.value
    }

    public func child(_ name: String) -> XMLElement? {
        children.first { $0.name == name }
    }
}

/// Reads small XML documents (such as catalog XML files) into ``XMLElement`` trees,
/// with the same hardening as ``PropertyListReader``.
public struct XMLElementReader: Sendable {
    public var limits: ReaderLimits

    public init(limits: ReaderLimits = ReaderLimits()) {
        self.limits = limits
    }

    public func read(_ source: SourceFile) -> (root: XMLElement?, diagnostics: [Diagnostic]) {
        let builder = ElementTreeBuilder()
        let diagnostics = XMLStreamParser.parse(source, limits: limits, handler: builder).sorted()
        if diagnostics.containsErrors { return (nil, diagnostics) }
        guard let root = builder.root else {
            return (nil, diagnostics + [.error("no root element", file: source.path, at: .startOfFile)])
        }
        return (root, diagnostics)
    }
}

private final class ElementTreeBuilder: XMLEventHandler {
    private var stack: [(element: XMLElement, text: [UInt8])] = []
    private(set) var root: XMLElement?

    func startElement(
        _ parser: XMLStreamParser, name: UnsafePointer<UInt8>, namespace: UnsafePointer<UInt8>?,
        attributes: XMLAttributes, at position: SourcePosition
    ) {
        let element = XMLElement(
            name: String(cString: name),
            namespace: namespace.map { String(cString: $0) },
            attributes: (0..<attributes.count).map { (attributes.name($0), attributes.value($0)) },
            children: [], text: "", position: position)
        stack.append((element, []))
    }

    func text(_ parser: XMLStreamParser, _ bytes: UnsafeBufferPointer<UInt8>) {
        guard !stack.isEmpty else { return }
        if stack[stack.count - 1].text.count + bytes.count > parser.limits.maximumTextBytes {
            parser.fail("text longer than \(parser.limits.maximumTextBytes) bytes", at: parser.cursorPosition)
            parser.stop()
            return
        }
        stack[stack.count - 1].text.append(contentsOf: bytes)
    }

    func endElement(_ parser: XMLStreamParser) {
        guard var (element, text) = stack.popLast() else { return }
        element.text = String(decoding: text, as: UTF8.self)
        text = []
        if stack.isEmpty {
            root = element
        } else {
            stack[stack.count - 1].element.children.append(element)
        }
    }
}
