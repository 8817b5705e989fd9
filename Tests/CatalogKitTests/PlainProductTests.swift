import PropertyList
import Testing

@testable import CatalogKit

/// Products are read in place when nothing about them needs reporting, and built and decoded
/// otherwise (``PlainProductReader``): both ways must give the same checked products and the
/// same diagnostics, whatever the product.
@Suite struct PlainProductTests {
    static let products = [
        // Every field the reader knows, in every form it takes.
        """
        <dict><key>id</key><string>com.example.all</string><key>type</key><string>auto-renewable</string>
        <key>referenceName</key><string>All &amp; more</string><key>status</key><string>cleared</string>
        <key>platforms</key><array><string>iOS</string><string>macOS</string></array>
        <key>minimumAppVersion</key><string>2.1</string><key>availableFrom</key><date>2026-01-01T00:00:00Z</date>
        <key>availableUntil</key><string>2027-01-01T00:00:00Z</string><key>displayOrder</key><integer>-3</integer>
        <key>subscription</key><dict><key>group</key><string>g</string><key>period</key><string>P1M</string><key>rank</key><integer>2</integer></dict>
        <key>metadata</key><dict><key>s</key><string>a "quoted" \\ <![CDATA[<b>]]></string><key>i</key><integer>7</integer>
        <key>r</key><real>2.50</real><key>t</key><true/><key>d</key><date>2026-02-03T04:05:06Z</date><key>b</key><data>aGk=</data>
        <key>a</key><array><string>x</string><dict/><array/></array><key>o</key><dict><key>k</key><false/></dict></dict></dict>
        """,
        "<dict><key>id</key><string>com.example.minimal</string></dict>",
        "<dict/>",
        "<dict><key>id</key><string/><key>platforms</key><array/><key>metadata</key><dict/></dict>",
        // Each of these has something to report, or a shape only building reads.
        "<string>com.example.not-a-dict</string>",
        "<dict><key>id</key><string>com.example.unknown</string><key>colour</key><string>red</string></dict>",
        "<dict><key>id</key><integer>5</integer></dict>",
        "<dict><key>id</key><string>com.example.badplatforms</string><key>platforms</key><array><integer>1</integer></array></dict>",
        "<dict><key>id</key><string>com.example.baddate</string><key>availableFrom</key><string>tomorrow</string></dict>",
        "<dict><key>id</key><string>com.example.datekind</string><key>availableUntil</key><integer>1</integer></dict>",
        "<dict><key>id</key><string>com.example.order</string><key>displayOrder</key><string>1</string></dict>",
        "<dict><key>id</key><string>com.example.sub</string><key>subscription</key><dict><key>tier</key><string>x</string></dict></dict>",
        "<dict><key>id</key><string>com.example.subkind</string><key>subscription</key><string>g</string></dict>",
        "<dict><key>id</key><string>com.example.meta</string><key>metadata</key><array/></dict>",
        "<dict><key>id</key><string>com.example.nan</string><key>metadata</key><dict><key>x</key><real>nan</real></dict></dict>",
        "<dict><key>id</key><string>com.example.dup</string><key>id</key><string>again</string></dict>",
        "<dict><key>id</key><string>com.example.dupmeta</string><key>metadata</key><dict><key>x</key><true/><key>x</key><true/></dict></dict>",
        "<dict><key>id</key><string>com.example.badint</string><key>displayOrder</key><integer>1.5</integer></dict>",
        "<dict><key>id</key><string>com.example.stray</string>text</dict>",
        "<dict><key>id</key><string>com.example.lonely</string><key>type</key></dict>",
    ]

    @Test(arguments: products)
    func readingInPlaceDecodesAsBuilding(product: String) {
        let document = """
            <?xml version="1.0" encoding="UTF-8"?>
            <plist version="1.0">
            <dict><key>products</key><array>
            \(product)
            \(product)
            </array></dict>
            </plist>
            """
        func decode(inPlace: Bool) -> (products: String, diagnostics: [String]) {
            var decoder = PlistSourceDecoder(reader: PropertyListReader())
            decoder.readsPlainProducts = inPlace
            var diagnostics: [Diagnostic] = []
            let definition = decoder.decode(SourceFile(path: "app.plist", bytes: Array(document.utf8)), into: &diagnostics)
            return (String(describing: definition?.products), diagnostics.sorted().map(\.description))
        }
        let inPlace = decode(inPlace: true)
        let built = decode(inPlace: false)
        #expect(inPlace.products == built.products)
        #expect(inPlace.diagnostics == built.diagnostics)
    }

    /// A big file's batches are decoded on the pipeline's queue, or by the parser when the queue
    /// is behind, and kept in source order either way: the same products and the same
    /// diagnostics, in the same order, whoever decoded which batch.
    @Test func whoeverDecodesABatchProductsKeepTheirOrder() {
        // Every sample product a few times, each with an identifier of its own where it has one.
        let products = (0..<12).flatMap { round in
            Self.products.map { $0.replacingOccurrences(of: "<string>com.example.", with: "<string>com.example.r\(round).") }
        }
        let document = """
            <?xml version="1.0" encoding="UTF-8"?>
            <plist version="1.0"><dict><key>products</key><array>\(products.joined(separator: "\n"))</array></dict></plist>
            """
        // The line each product starts on (the document's first line is the XML declaration).
        var startLines: [Int] = []
        var line = 2
        for product in products {
            startLines.append(line)
            line += product.filter { $0 == "\n" }.count + 1
        }
        /// The product a diagnostic (`app.plist:LINE:COLUMN: …`) is about, by its line.
        func productIndex(_ diagnostic: String) -> Int {
            let line = Int(diagnostic.split(separator: ":")[1])!
            return startLines.lastIndex { $0 <= line }!
        }
        func decode(batchSize: Int, queuedBatches: Int) -> (products: String, ids: [String], diagnostics: [String]) {
            var decoder = PlistSourceDecoder(reader: PropertyListReader())
            decoder.batchSize = batchSize
            decoder.queuedBatches = queuedBatches
            var diagnostics: [Diagnostic] = []
            let definition = decoder.decode(SourceFile(path: "app.plist", bytes: Array(document.utf8)), into: &diagnostics)
            // Not sorted: the order is what is compared.
            return (
                String(describing: definition?.products), definition?.products.products.map(\.id) ?? [], diagnostics.map(\.description)
            )
        }
        // Batches end where they end: the parser's own problems follow their batch's products,
        // so each way is compared with every batch on the queue, batches of the same size; and
        // every way, that one too, against the source itself, which a mistake shared by all the
        // ways would not keep.
        for batchSize in [1, 3, 7] {
            let onTheQueue = decode(batchSize: batchSize, queuedBatches: products.count)
            #expect(onTheQueue.diagnostics.count > products.count / 2)
            for queuedBatches in [0, 1, 2, products.count] {
                let way = "batches of \(batchSize), \(queuedBatches) queued"
                let other = decode(batchSize: batchSize, queuedBatches: queuedBatches)
                #expect(other.products == onTheQueue.products, "\(way)")
                #expect(other.diagnostics == onTheQueue.diagnostics, "\(way)")
                // Products in the order the source has them, and each batch's problems after
                // those of the batches before it.
                let places = other.ids.map { document.range(of: "<string>\($0)</string>")!.lowerBound }
                #expect(other.ids.count > products.count / 4 && places == places.sorted(), "\(way)")
                let batches = other.diagnostics.map { productIndex($0) / batchSize }
                #expect(batches == batches.sorted(), "\(way)")
            }
        }
    }

    /// The reader must take the common case, or the comparison above proves nothing.
    @Test func plainProductsAreReadInPlace() throws {
        var cursorTaken = 0
        let document = """
            <?xml version="1.0" encoding="UTF-8"?>
            <plist version="1.0"><dict><key>products</key><array>\(Self.products[0])\(Self.products[1])</array></dict></plist>
            """
        _ = PropertyListReader().read(SourceFile(path: "app.plist", bytes: Array(document.utf8)), streamingArray: "products", batchesOf: 8)
        {
            _ = RecordedElementBuilder(path: "app.plist").build(
                $0,
                readingPlain: { cursor in
                    guard (try? PlainProductReader(file: "app.plist").product(&cursor)) != nil else { return false }
                    cursorTaken += 1
                    return true
                }, { _ in })
        }
        #expect(cursorTaken == 2)
    }
}
