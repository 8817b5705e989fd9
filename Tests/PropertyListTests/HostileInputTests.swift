import Foundation
import PropertyList
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// Files built to attack XML parsers: each is refused with a diagnostic, and nothing is
/// fetched, read, or expanded on the way.
@Suite struct HostileInputTests {
    private func firstError(_ text: String, limits: ReaderLimits = ReaderLimits()) -> String? {
        read(text, limits: limits).diagnostics.first { $0.severity == .error }?.description
    }

    @Test func billionLaughsStopsAtTheFirstDeclaration() {
        var entities = "<!ENTITY lol \"lol\">\n"
        for level in 1...9 {
            entities += "<!ENTITY lol\(level) \"" + String(repeating: "&lol\(level == 1 ? "" : String(level - 1));", count: 10) + "\">\n"
        }
        let text = "<?xml version=\"1.0\"?>\n<!DOCTYPE plist [\n\(entities)]>\n<plist><string>&lol9;</string></plist>"
        let result = read(text)
        #expect(result.root == nil)
        #expect(printed(result).first == "test.plist:3:19: error: entity declarations are not allowed (entity 'lol')")
    }

    @Test func quadraticBlowUpIsRefused() {
        let big = String(repeating: "x", count: 100_000)
        let references = String(repeating: "&a;", count: 10_000)
        let text = "<?xml version=\"1.0\"?><!DOCTYPE plist [<!ENTITY a \"\(big)\">]><plist><string>\(references)</string></plist>"
        #expect(firstError(text)?.contains("entity declarations are not allowed (entity 'a')") == true)
    }

    @Test func undeclaredEntityReferenceIsAnError() {
        #expect(firstError(plist("<string>&nope;</string>"))?.contains("'&nope;'") == true)
    }

    @Test func parameterEntitiesAreRefused() {
        let text = "<?xml version=\"1.0\"?><!DOCTYPE plist [<!ENTITY % p SYSTEM \"file:///etc/passwd\"> %p;]><plist/>"
        #expect(firstError(text)?.contains("entity declarations are not allowed (entity 'p')") == true)
    }

    @Test func internalSubsetDeclarationsAreRefused() {
        let text = "<?xml version=\"1.0\"?><!DOCTYPE plist [<!ATTLIST plist injected CDATA \"x\">]><plist><true/></plist>"
        #expect(firstError(text)?.contains("DTD declarations are not allowed") == true)
    }

    /// A `file://` DTD or entity pointing at a FIFO would block forever if anything opened it.
    @Test(arguments: ["dtd", "entity"])
    func fileURLsAreNeverOpened(kind: String) throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("fifo-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let fifo = directory.appendingPathComponent("trap")
        #expect(mkfifo(fifo.path, 0o600) == 0)
        let text =
            kind == "dtd"
            ? "<?xml version=\"1.0\"?><!DOCTYPE plist SYSTEM \"file://\(fifo.path)\"><plist><true/></plist>"
            : "<?xml version=\"1.0\"?><!DOCTYPE plist [<!ENTITY x SYSTEM \"file://\(fifo.path)\">]><plist><string>&x;</string></plist>"
        let finished = DispatchSemaphore(value: 0)
        let box = ResultBox()
        Thread.detachNewThread {
            box.result = read(text)
            finished.signal()
        }
        let completed = finished.wait(timeout: .now() + 10) == .success
        if !completed {
            // Unblock the reader that opened the FIFO before failing.
            let writer = open(fifo.path, O_WRONLY | O_NONBLOCK)
            if writer >= 0 { close(writer) }
        }
        #expect(completed, "the reader opened the file:// resource")
        if kind == "dtd" {
            // The standard DOCTYPE form with a system id is accepted and never fetched.
            #expect(box.result?.diagnostics.isEmpty == true)
        } else {
            #expect(box.result?.root == nil)
        }
    }

    /// A DTD or entity on a local HTTP port: the listener must see no connection.
    @Test(arguments: ["dtd", "entity"])
    func httpURLsAreNeverFetched(kind: String) throws {
        let listener = try LoopbackListener()
        defer { listener.close() }
        let url = "http://127.0.0.1:\(listener.port)/evil.dtd"
        let text =
            kind == "dtd"
            ? "<?xml version=\"1.0\"?><!DOCTYPE plist PUBLIC \"-//Apple//DTD PLIST 1.0//EN\" \"\(url)\"><plist><true/></plist>"
            : "<?xml version=\"1.0\"?><!DOCTYPE plist [<!ENTITY x SYSTEM \"\(url)\">]><plist><string>&x;</string></plist>"
        _ = read(text)
        #expect(listener.pendingConnections() == 0)
    }

    @Test func deepNestingIsCutAtTheLimit() {
        let text = "<plist>" + String(repeating: "<array>", count: 10_000) + String(repeating: "</array>", count: 10_000) + "</plist>"
        // <plist> is level 1, so the 64th <array> is the 65th level; it starts at byte 7 + 63 * 7.
        #expect(firstError(text) == "test.plist:1:449: error: elements nest deeper than 64 levels")
    }

    @Test func elementCountIsBounded() {
        var limits = ReaderLimits()
        limits.maximumElements = 100
        let text = plist("<array>" + String(repeating: "<true/>", count: 1000) + "</array>")
        #expect(firstError(text, limits: limits)?.hasSuffix("error: document has more than 100 elements") == true)
    }

    @Test func hugeTextNodesAreRefused() {
        let text = plist("<string>" + String(repeating: "a", count: 2 << 20) + "</string>")
        #expect(firstError(text)?.contains("error: text longer than 1048576 bytes") == true)
    }

    @Test func hugeAttributeValuesAreRefused() {
        let text = "<plist version=\"" + String(repeating: "1", count: 2 << 20) + "\"><true/></plist>"
        #expect(firstError(text)?.contains("attribute value longer than 1048576 bytes") == true)
    }

    @Test func invalidUTF8IsRefusedAtItsPosition() {
        var bytes = Array(plist("<string>caf</string>").utf8)
        let marker = Array("caf".utf8)
        let at = bytes.indices.first { bytes[$0...].starts(with: marker) }! + 3
        bytes.insert(0xE9, at: at)  // Latin-1 é, invalid in UTF-8
        let result = PropertyListReader().read(SourceFile(path: "test.plist", bytes: bytes))
        #expect(result.root == nil)
        #expect(result.diagnostics.first?.description.hasPrefix("test.plist:4:12: error:") == true)
        #expect(result.diagnostics.first?.message.contains("UTF-8") == true)
    }

    @Test func truncatedFilesAreRefused() {
        let text = plist("<array><string>a</string>")
        let cut = String(text.prefix(text.count - 20))
        #expect(read(cut).root == nil)
        #expect(read(cut).diagnostics.containsErrors)
    }

    @Test func emptyAndBlankFilesAreRefused() {
        #expect(firstError("") == "test.plist:1:1: error: file is empty")
        #expect(firstError("   \n") != nil)
    }

    @Test func gzipIsRefusedWithAnExplanation() {
        let result = PropertyListReader().read(SourceFile(path: "test.plist", bytes: [0x1F, 0x8B, 0x08, 0, 0, 0, 0, 0]))
        #expect(
            printed(result) == [
                "test.plist:1:1: error: file is gzip-compressed; decompress it (gunzip) and keep the plain XML in the catalog"
            ])
    }

    @Test func binaryPlistsGetConversionAdvice() {
        let result = PropertyListReader().read(SourceFile(path: "test.plist", bytes: Array("bplist00\u{0}\u{1}".utf8)))
        #expect(printed(result).first?.contains("plutil -convert xml1 test.plist") == true)
    }

    @Test func otherEncodingsAreRefused() {
        #expect(
            firstError("<?xml version=\"1.0\" encoding=\"ISO-8859-1\"?><plist/>")
                == "test.plist:1:1: error: encoding 'ISO-8859-1' is not supported; save the file as UTF-8")
        let utf16 = PropertyListReader().read(SourceFile(path: "test.plist", bytes: [0xFF, 0xFE, 0x3C, 0x00]))
        #expect(printed(utf16) == ["test.plist:1:1: error: file is UTF-16; save it as UTF-8"])
    }

    @Test func oversizedFilesAreNotRead() throws {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("big-\(UUID().uuidString).plist")
        try Data(repeating: 0x20, count: 4096).write(to: url)
        defer { try? FileManager.default.removeItem(at: url) }
        var limits = ReaderLimits()
        limits.maximumFileBytes = 1024
        guard case .failure(let diagnostic) = SourceFile.read(url, displayPath: "big.plist", limits: limits) else {
            Issue.record("an oversized file was read")
            return
        }
        #expect(diagnostic.message.contains("larger than"))
    }
}

private final class ResultBox: @unchecked Sendable {
    // Written by the reader thread before it signals the semaphore, read after the wait.
    var result: PropertyListReader.Result?
}

/// A TCP listener on a free loopback port that counts connection attempts.
private struct LoopbackListener {
    let descriptor: Int32
    let port: UInt16

    init() throws {
        let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        self.descriptor = descriptor
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(descriptor, $0, length) }
        }
        guard bound == 0, listen(descriptor, 16) == 0 else { throw POSIXError(.EADDRINUSE) }
        _ = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(descriptor, $0, &length) }
        }
        port = UInt16(bigEndian: address.sin_port)
        _ = length
        _ = fcntl(descriptor, F_SETFL, O_NONBLOCK)
    }

    /// Accepts whatever is queued without waiting.
    func pendingConnections() -> Int {
        var count = 0
        while true {
            let client = accept(descriptor, nil, nil)
            if client < 0 { return count }
            Glibc.close(client)
            count += 1
        }
    }

    func close() {
        Glibc.close(descriptor)
    }
}
