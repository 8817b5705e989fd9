import CatalogKit
import CatalogTestSupport
import Foundation
import PropertyList
import Testing
import Time

/// `catalog/<app>.feedback.plist`: canonical bytes, read back by the hardened reader.
@Suite struct FeedbackFileTests {
    static let sample = FeedbackFile(
        verdicts: [
            "com.example.level2": Verdict(
                status: .quarantined, reason: "reported invalid by 23 production installs in the last 24 h, invalid rate 0.92",
                since: Timestamp(iso8601: "2026-03-10T12:00:00Z")!,
                evidence: VerdictEvidence(
                    countedFrom: Timestamp(iso8601: "2026-03-09T12:00:00Z")!, reports: 31,
                    installs: InstallCounts(production: 23, sandbox: 2),
                    invalidRate: 0.92, firstSeen: Timestamp(iso8601: "2026-03-10T01:02:03Z")!,
                    lastSeen: Timestamp(iso8601: "2026-03-10T11:59:00Z")!, platforms: ["iOS"], appVersions: ["2.3", "2.4"],
                    storefronts: ["FRA", "USA"], feedRevisions: [3])),
            "com.example.level1": Verdict(
                status: .suspect, reason: "written by hand: price tier <wrong> & pending",
                since: Timestamp(iso8601: "2026-03-08T09:30:00Z")!),
        ],
        released: ["com.example.rocket_car": Timestamp(iso8601: "2026-03-09T08:00:00Z")!])

    static let sampleText = """
        <?xml version="1.0" encoding="UTF-8"?>
        <!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" "http://www.apple.com/DTDs/PropertyList-1.0.dtd">
        <plist version="1.0">
        <!-- Written by 'catalog feedback'. Release an identifier with: catalog feedback release <app> <id> -->
        <dict>
        \t<key>verdicts</key>
        \t<dict>
        \t\t<key>com.example.level1</key>
        \t\t<dict>
        \t\t\t<key>status</key>
        \t\t\t<string>suspect</string>
        \t\t\t<key>reason</key>
        \t\t\t<string>written by hand: price tier &lt;wrong&gt; &amp; pending</string>
        \t\t\t<key>since</key>
        \t\t\t<date>2026-03-08T09:30:00Z</date>
        \t\t</dict>
        \t\t<key>com.example.level2</key>
        \t\t<dict>
        \t\t\t<key>status</key>
        \t\t\t<string>quarantined</string>
        \t\t\t<key>reason</key>
        \t\t\t<string>reported invalid by 23 production installs in the last 24 h, invalid rate 0.92</string>
        \t\t\t<key>since</key>
        \t\t\t<date>2026-03-10T12:00:00Z</date>
        \t\t\t<key>evidence</key>
        \t\t\t<dict>
        \t\t\t\t<key>countedFrom</key>
        \t\t\t\t<date>2026-03-09T12:00:00Z</date>
        \t\t\t\t<key>reports</key>
        \t\t\t\t<integer>31</integer>
        \t\t\t\t<key>installs</key>
        \t\t\t\t<dict>
        \t\t\t\t\t<key>production</key>
        \t\t\t\t\t<integer>23</integer>
        \t\t\t\t\t<key>sandbox</key>
        \t\t\t\t\t<integer>2</integer>
        \t\t\t\t</dict>
        \t\t\t\t<key>invalidRate</key>
        \t\t\t\t<real>0.92</real>
        \t\t\t\t<key>firstSeen</key>
        \t\t\t\t<date>2026-03-10T01:02:03Z</date>
        \t\t\t\t<key>lastSeen</key>
        \t\t\t\t<date>2026-03-10T11:59:00Z</date>
        \t\t\t\t<key>platforms</key>
        \t\t\t\t<array>
        \t\t\t\t\t<string>iOS</string>
        \t\t\t\t</array>
        \t\t\t\t<key>appVersions</key>
        \t\t\t\t<array>
        \t\t\t\t\t<string>2.3</string>
        \t\t\t\t\t<string>2.4</string>
        \t\t\t\t</array>
        \t\t\t\t<key>storefronts</key>
        \t\t\t\t<array>
        \t\t\t\t\t<string>FRA</string>
        \t\t\t\t\t<string>USA</string>
        \t\t\t\t</array>
        \t\t\t\t<key>feedRevisions</key>
        \t\t\t\t<array>
        \t\t\t\t\t<integer>3</integer>
        \t\t\t\t</array>
        \t\t\t</dict>
        \t\t</dict>
        \t</dict>
        \t<key>released</key>
        \t<dict>
        \t\t<key>com.example.rocket_car</key>
        \t\t<date>2026-03-09T08:00:00Z</date>
        \t</dict>
        </dict>
        </plist>

        """

    static func read(_ text: String) -> FeedbackFile.Read {
        FeedbackFile.decode(text: text, path: "catalog/com.example.app.feedback.plist")
    }

    @Test func encodesCanonically() {
        #expect(String(decoding: Self.sample.encoded, as: UTF8.self) == Self.sampleText)
    }

    /// What is written reads back equal, and writes the same bytes again.
    @Test func roundTrips() throws {
        let read = Self.read(Self.sampleText)
        #expect(read.diagnostics.map(\.description) == [])
        let file = try #require(read.file)
        #expect(file == Self.sample)
        #expect(file.encoded == Self.sample.encoded)
        #expect(read.positions["com.example.level2"] == SourcePosition(line: 17, column: 3))
    }

    @Test func writesOnlyWhatChanged() throws {
        try withCatalog { catalog in
            let url = catalog.catalogDirectory.appendingPathComponent("com.example.app.feedback.plist")
            let createdEmpty = try FeedbackFile().write(to: url)
            #expect(!createdEmpty && !FileManager.default.fileExists(atPath: url.path), "nothing to say: no file")
            let written = try Self.sample.write(to: url)
            let writtenAgain = try Self.sample.write(to: url)
            #expect(written && !writtenAgain, "same bytes: not written again")
            #expect(FileManager.default.contents(atPath: url.path) == Data(Self.sampleText.utf8))

            var released = Self.sample
            _ = released.release("com.example.level2", at: Timestamp(iso8601: "2026-03-11T00:00:00Z")!)
            let writtenReleased = try released.write(to: url)
            #expect(writtenReleased)
            let read = FeedbackFile.read(url, displayPath: "catalog/com.example.app.feedback.plist")
            #expect(read.file?.verdicts["com.example.level2"] == nil)
            #expect(read.file?.released["com.example.level2"] == Timestamp(iso8601: "2026-03-11T00:00:00Z")!)
            let emptied = try FeedbackFile().write(to: url)
            #expect(emptied, "an existing file is emptied, not left stale")
        }
    }

    /// Release answers nil and changes nothing for an identifier without a verdict.
    @Test func releaseNeedsAVerdict() {
        var file = Self.sample
        #expect(file.release("com.example.rocket_car", at: Timestamp(iso8601: "2026-03-11T00:00:00Z")!) == nil)
        #expect(file == Self.sample)
    }

    struct Malformed: Sendable, CustomTestStringConvertible {
        var name: String
        var body: String
        var diagnostics: [String]
        var isReadable: Bool = false
        var testDescription: String { name }
    }

    static let malformed: [Malformed] = [
        Malformed(
            name: "root is not a dict", body: "<array/>",
            diagnostics: ["4:1: error: the root must be a <dict>, found <array>"]),
        Malformed(
            name: "verdict without reason, with an unknown status",
            body: """
                <dict>
                \t<key>verdicts</key>
                \t<dict>
                \t\t<key>com.example.x</key>
                \t\t<dict>
                \t\t\t<key>status</key>
                \t\t\t<string>banned</string>
                \t\t\t<key>since</key>
                \t\t\t<date>2026-03-08T09:30:00Z</date>
                \t\t</dict>
                \t</dict>
                </dict>
                """,
            diagnostics: [
                "8:3: error: the verdict on 'com.example.x' has no 'reason'",
                "10:4: error: unknown status 'banned'; expected suspect or quarantined",
            ]),
        Malformed(
            name: "wrong kinds",
            body: """
                <dict>
                \t<key>verdicts</key>
                \t<array/>
                \t<key>released</key>
                \t<dict>
                \t\t<key>com.example.y</key>
                \t\t<string>yesterday</string>
                \t</dict>
                </dict>
                """,
            diagnostics: [
                "6:2: error: 'verdicts' must be a <dict>, found <array>",
                "10:3: error: 'com.example.y' value 'yesterday' is not a date; expected YYYY-MM-DDTHH:MM:SSZ",
            ]),
        Malformed(
            name: "unknown keys are only warnings",
            body: """
                <dict>
                \t<key>note</key>
                \t<string>reviewed on Monday</string>
                </dict>
                """,
            diagnostics: ["5:2: warning: unknown key 'note' is ignored"], isReadable: true),
        Malformed(
            name: "not a property list", body: "<dict>",
            diagnostics: ["5:9: error: Opening and ending tag mismatch: dict line 4 and plist"]),
    ]

    @Test(arguments: malformed)
    func diagnosesMalformedFiles(_ example: Malformed) {
        let read = Self.read(plist(example.body))
        #expect(read.diagnostics.map(\.description) == example.diagnostics.map { "catalog/com.example.app.feedback.plist:" + $0 })
        #expect((read.file != nil) == example.isReadable)
    }

    @Test func missingFileIsEmpty() {
        let read = FeedbackFile.read(URL(fileURLWithPath: "/nonexistent/com.example.app.feedback.plist"), displayPath: "x")
        #expect(read.file == FeedbackFile())
        #expect(read.diagnostics.isEmpty)
    }

    /// Reasons are free text: XML's special characters and a `--` in the comment survive.
    @Test func writerEscapes() {
        var writer = PropertyListWriter()
        writer.comment("a -- b")
        writer.string("<&>\r\u{1}")
        #expect(
            String(decoding: writer.document, as: UTF8.self).hasSuffix(
                "<!-- a - - b -->\n<string>&lt;&amp;&gt;&#13;\u{FFFD}</string>\n</plist>\n"))
    }
}

extension FeedbackFile {
    static func decode(text: String, path: String) -> Read {
        decode(SourceFile(path: path, bytes: Array(text.utf8)))
    }
}
