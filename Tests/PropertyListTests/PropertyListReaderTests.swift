import Foundation
import PropertyList
import Testing

@Suite struct PropertyListReaderTests {
    @Test func readsApplesProductIdentifierExample() throws {
        let result = read(
            plist(
                """
                <array>
                \t<string>com.example.level1</string>
                \t<string>com.example.level2</string>
                \t<string>com.example.rocket_car</string>
                </array>
                """))
        #expect(result.diagnostics.isEmpty)
        guard case .array(let items) = try #require(result.root).value else {
            Issue.record("root is not an array")
            return
        }
        let strings = items.compactMap { item -> String? in
            if case .string(let value) = item.value { return value }
            return nil
        }
        #expect(strings == ["com.example.level1", "com.example.level2", "com.example.rocket_car"])
        // Line 5, after a tab: column 2 is where <string> starts.
        #expect(
            items.map(\.position) == [
                SourcePosition(line: 5, column: 2), SourcePosition(line: 6, column: 2), SourcePosition(line: 7, column: 2),
            ])
    }

    @Test func readsEveryValueKind() throws {
        let result = read(
            plist(
                """
                <dict>
                  <key>s</key><string>a &amp; b &lt;c&gt; &#x41;</string>
                  <key>i</key><integer>-9223372036854775808</integer>
                  <key>r</key><real>2.5</real>
                  <key>t</key><true/>
                  <key>f</key><false/>
                  <key>d</key><date>2026-02-28T13:14:15Z</date>
                  <key>b</key><data>aGVs
                  bG8=</data>
                  <key>c</key><string><![CDATA[<raw>]]></string>
                </dict>
                """))
        #expect(result.diagnostics.isEmpty)
        guard case .dictionary(let dict) = try #require(result.root).value else {
            Issue.record("root is not a dict")
            return
        }
        guard case .string("a & b <c> A") = dict["s"]?.value else { Issue.record("s: \(String(describing: dict["s"]))"); return }
        guard case .integer(Int64.min) = dict["i"]?.value else { Issue.record("i"); return }
        guard case .real(2.5) = dict["r"]?.value else { Issue.record("r"); return }
        guard case .boolean(true) = dict["t"]?.value, case .boolean(false) = dict["f"]?.value else { Issue.record("bool"); return }
        guard case .date(let date) = dict["d"]?.value else { Issue.record("d"); return }
        #expect(date.iso8601 == "2026-02-28T13:14:15Z")
        guard case .data(let bytes) = dict["b"]?.value else { Issue.record("b"); return }
        #expect(bytes == Array("hello".utf8))
        guard case .string("<raw>") = dict["c"]?.value else { Issue.record("c"); return }
        #expect(dict.entries.map(\.key) == ["s", "i", "r", "t", "f", "d", "b", "c"])
        #expect(dict["i"]?.position == SourcePosition(line: 6, column: 15))
    }

    @Test func streamsTheProductsArray() throws {
        var streamed: [String] = []
        let result = PropertyListReader().read(
            source(
                plist(
                    """
                    <dict>
                    <key>app</key><string>x</string>
                    <key>products</key>
                    <array><dict><key>id</key><string>a</string></dict><dict><key>id</key><string>b</string></dict></array>
                    </dict>
                    """)), streamingArray: "products"
        ) { node in
            if case .dictionary(let dict) = node.value, case .string(let id) = dict["id"]?.value { streamed.append(id) }
        }
        #expect(result.diagnostics.isEmpty)
        #expect(streamed == ["a", "b"])
        guard case .dictionary(let root) = try #require(result.root).value, case .array(let kept) = root["products"]?.value else {
            Issue.record("shape")
            return
        }
        #expect(kept.isEmpty)
    }

    /// Elements of a streamed array, well-formed or not, for the tests of recording them.
    static let recordedElements = [
        "<dict><key>id</key><string>a</string><key>n</key><integer>7</integer></dict>",
        "<dict>\n  <key>a</key><integer>1</integer>\n  <key>a</key><integer>2</integer>\n</dict>",
        "<dict><key>lonely</key></dict>",
        "<dict><string>no key</string></dict>",
        "<dict><key>x</key><foo><string>inside unknown</string>text</foo><key>y</key><true/></dict>",
        "<dict><key>x</key><string>a<b>nested</b>c</string></dict>",
        "<dict><key>x</key><integer>12x</integer><key>d</key><date>2026-02-30T00:00:00Z</date></dict>",
        "<dict><key>b</key><data>aGVsbG8!</data><key>r</key><real>one</real></dict>",
        "<dict>stray text<key>k</key><string>v</string></dict>",
        "<dict><key>p</key><plist><string>x</string></plist></dict>",
        "<string>just a string</string>",
        "<array><string>a</string><array><dict/></array></array>",
        "<dict><key>k</key><string>\(String(repeating: "x", count: 300))</string></dict>",
        "<foo/>",
        "<true>yes</true>",
        "<dict><key>t</key><string>a &amp; b <![CDATA[<c>]]></string></dict>",
        "<dict><key>d</key><date>2026-01-02T03:04:05Z</date><key>f</key><false/><key>r</key><real>1.5</real>"
            + "<key>b</key><data>aGVsbG8=</data><key>e</key><string/><key>m</key><dict><key>z</key><array/></dict></dict>",
        "<dict>\n  <key>a &amp; b</key>\n  <string>split key</string>\n</dict>",
        "<dict><key>m</key><dict><key>x</key><true/><key>x</key><false/></dict></dict>",
        "<dict><key>k</key><dict><key>a</key><integer>1</integer></dict><key>k2</key></dict>",
        "<dict><key>n</key><integer>9223372036854775808</integer></dict>",
    ]

    /// Streamed elements are recorded while the parser reads and built later, elsewhere: every
    /// element, well-formed or not, must come out exactly as reading it in place does, with the
    /// same diagnostics at the same positions.
    @Test(arguments: recordedElements)
    func streamedElementsReadAsInPlace(element: String) {
        var limits = ReaderLimits()
        limits.maximumTextBytes = 256
        let document = plist("<dict>\n<key>products</key>\n<array>\n\(element)\n\(element)\n</array>\n</dict>")
        let inPlace = PropertyListReader(limits: limits).read(source(document))
        var streamed: [String] = []
        let result = PropertyListReader(limits: limits).read(source(document), streamingArray: "products") {
            streamed.append(describe($0))
        }
        #expect(printed(result) == printed(inPlace))
        guard case .dictionary(let root) = inPlace.root?.value, case .array(let items) = root["products"]?.value else {
            #expect(inPlace.root == nil || printed(inPlace).contains { $0.contains("longer than") })
            return
        }
        #expect(streamed == items.map(describe))
    }

    /// Reading a recorded element in place must give what building it gives, or refuse it: a
    /// reader that rebuilds values from the tokens ends up with the same values and the same
    /// diagnostics as reading in place, and takes exactly the elements with nothing to report.
    @Test(arguments: recordedElements)
    func plainElementsReadAsBuilt(element: String) throws {
        var limits = ReaderLimits()
        limits.maximumTextBytes = 256
        let document = plist("<dict>\n<key>products</key>\n<array>\n\(element)\n\(element)\n</array>\n</dict>")
        let inPlace = PropertyListReader(limits: limits).read(source(document))
        let builder = RecordedElementBuilder(path: "test.plist")
        var values: [String] = []
        var taken = 0
        var built: [Diagnostic] = []
        var result = PropertyListReader(limits: limits).read(source(document), streamingArray: "products", batchesOf: 1) { batch in
            built += builder.build(
                batch,
                readingPlain: { cursor in
                    guard let node = try? rebuild(&cursor), cursor.isFinished else { return false }
                    values.append(describe(node))
                    taken += 1
                    return true
                },
                { values.append(describe($0)) })
        }
        result.diagnostics = (result.diagnostics + built).sorted()
        #expect(printed(result) == printed(inPlace))
        if case .dictionary(let root) = inPlace.root?.value, case .array(let items) = root["products"]?.value {
            #expect(values == items.map(describe))
        }
        let splitKey = element.contains("<key>a &amp; b</key>")
        #expect((taken == 2) == (inPlace.diagnostics.isEmpty && !splitKey), "taken \(taken) of 2")
    }

    /// Each content problem is reported at its element, and reading goes on to find the others.
    @Test func reportsEveryContentProblemAtItsPosition() {
        let result = read(
            plist(
                """
                <dict>
                  <key>a</key><integer>1</integer>
                  <key>a</key><integer>2</integer>
                  <key>big</key><integer>9223372036854775808</integer>
                  <key>nan</key><integer>12x</integer>
                  <key>day</key><date>2026-02-30T00:00:00Z</date>
                  <key>form</key><date>2026-01-01 00:00:00</date>
                  <key>bytes</key><data>aGVsbG8!</data>
                  <key>pad</key><data>aG=Vs</data>
                  <key>odd</key><foo>1</foo>
                  <key>r</key><real>one</real>
                  <key>lonely</key>
                </dict>
                """))
        #expect(
            printed(result) == [
                "test.plist:6:3: error: duplicate key 'a' (first at 5:3)",
                "test.plist:7:17: error: integer 9223372036854775808 does not fit in 64 bits",
                "test.plist:8:17: error: '12x' is not a valid <integer>",
                "test.plist:9:17: error: '2026-02-30T00:00:00Z' is not a valid <date>; expected YYYY-MM-DDTHH:MM:SSZ",
                "test.plist:10:18: error: '2026-01-01 00:00:00' is not a valid <date>; expected YYYY-MM-DDTHH:MM:SSZ",
                "test.plist:11:19: error: <data> is not valid base64",
                "test.plist:12:17: error: <data> is not valid base64",
                "test.plist:13:17: error: unknown property list element <foo>",
                "test.plist:14:15: error: 'one' is not a valid <real>",
                "test.plist:15:3: error: key 'lonely' has no value",
            ])
    }

    @Test func reportsStructuralMistakes() {
        #expect(
            printed(read(plist("<dict><string>x</string></dict>"))) == [
                "test.plist:4:7: error: <string> in a <dict> needs a <key> before it"
            ])
        #expect(
            printed(read(plist("<array><key>k</key></array>"))) == [
                "test.plist:4:8: error: <key> 'k' outside a <dict>"
            ])
        #expect(
            printed(read(plist("<string>a</string><string>b</string>"))) == [
                "test.plist:4:19: error: <plist> holds more than one value"
            ])
        #expect(printed(read(plist("<array>text</array>"))).first?.contains("unexpected text 'text' between elements") == true)
        #expect(printed(read("<dict></dict>")) == ["test.plist:1:1: error: root element must be <plist>, found <dict>"])
        #expect(printed(read(plist("<true>yes</true>"))) == ["test.plist:4:1: error: <true/> must be empty"])
    }

    @Test func positionsStayExactDeepIntoALargeFile() {
        let lines = (0..<50_000).map { "\t<string>id\($0)</string>" }.joined(separator: "\n")
        let result = read(plist("<array>\n\(lines)\n\t<foo/>\n</array>"))
        // Header 3 lines, <array> line 4, 50,000 strings on lines 5...50004, <foo/> on 50005.
        #expect(printed(result) == ["test.plist:50005:2: error: unknown property list element <foo>"])
    }
}

@Suite struct StreamedFileTests {
    /// Files are streamed through libxml2's input window; positions must stay exact after
    /// the window has moved through several megabytes, including when one line is longer
    /// than the window.
    @Test func positionsStayExactWhenStreamingAFile() throws {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("stream-\(UUID().uuidString).plist")
        defer { try? FileManager.default.removeItem(at: url) }
        let lines = (0..<200_000).map { "\t<string>identifier.\($0)</string>" }.joined(separator: "\n")
        let longLine = String(repeating: "<string>x</string>", count: 20_000)
        try Data(plist("<array>\n\(lines)\n\(longLine)<foo/>\n</array>").utf8).write(to: url)
        guard case .success(let file) = SourceFile.read(url, displayPath: "big.plist") else {
            Issue.record("not readable")
            return
        }
        let result = PropertyListReader().read(file)
        // 3 header lines, <array> on line 4, 200,000 strings, then the long line.
        #expect(result.diagnostics.map(\.description) == ["big.plist:200005:360001: error: unknown property list element <foo>"])
    }

    /// The size cap is checked when the file is opened and again as it is read: a file that
    /// grows past it in between is refused, not read to its new end.
    @Test func aFileGrowingPastTheCapWhileReadIsRefused() throws {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("grow-\(UUID().uuidString).plist")
        defer { try? FileManager.default.removeItem(at: url) }
        try Data(plist("<array><string>a</string></array>").utf8).write(to: url)
        var limits = ReaderLimits()
        limits.maximumFileBytes = 4096
        guard case .success(let file) = SourceFile.read(url, displayPath: "grow.plist", limits: limits) else {
            Issue.record("not readable")
            return
        }
        let grown = plist("<array>" + String(repeating: "<string>a</string>", count: 1000) + "</array>")
        try Data(grown.utf8).write(to: url)
        let result = PropertyListReader(limits: limits).read(file)
        #expect(result.root == nil)
        #expect(result.diagnostics.map(\.description) == ["grow.plist:1:1: error: file grew past the size limit while being read"])
    }
}

/// A value with every position in it, for comparing two reads of the same element.
/// The value of the element at the cursor, built from its tokens.
private func rebuild(_ cursor: inout PlainElementCursor) throws(PlainElementCursor.NotPlain) -> PropertyListNode {
    guard let token = try cursor.next() else { throw .init() }
    return try rebuild(token, &cursor)
}

private func rebuild(_ token: PlainElementCursor.Token, _ cursor: inout PlainElementCursor) throws(PlainElementCursor.NotPlain)
    -> PropertyListNode
{
    switch token {
    case .string(let bytes, let position):
        return PropertyListNode(.string(String(decoding: bytes, as: UTF8.self)), at: position)
    case .value(let value, let position):
        return PropertyListNode(value, at: position)
    case .startArray(let position):
        var items: [PropertyListNode] = []
        while let item = try cursor.next() {
            if case .end = item { return PropertyListNode(.array(items), at: position) }
            items.append(try rebuild(item, &cursor))
        }
        throw .init()
    case .startDictionary(let position):
        var entries: [PropertyListDictionary.Entry] = []
        while let item = try cursor.next() {
            switch item {
            case .end:
                return PropertyListNode(.dictionary(PropertyListDictionary(entries: entries)), at: position)
            case .key(let bytes, let keyPosition):
                let key = String(decoding: bytes, as: UTF8.self)
                guard let value = try cursor.next() else { throw .init() }
                entries.append(.init(key: key, keyPosition: keyPosition, value: try rebuild(value, &cursor)))
            default:
                throw .init()
            }
        }
        throw .init()
    case .key, .end:
        throw .init()
    }
}

private func describe(_ node: PropertyListNode) -> String {
    switch node.value {
    case .array(let items): "\(node.position)[\(items.map(describe).joined(separator: ","))]"
    case .dictionary(let dict):
        "\(node.position){\(dict.entries.map { "\($0.key)@\($0.keyPosition)=\(describe($0.value))" }.joined(separator: ","))}"
    default: "\(node.position)\(node.value)"
    }
}
