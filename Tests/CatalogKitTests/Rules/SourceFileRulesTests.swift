import CatalogKit
import CatalogTestSupport
import Foundation
import Testing

/// Files and folders of `catalog/`: names, what is a source, and what is ignored. The rules of docs/contract.md section 1, one test per rule, with the exact lines an editor sees
/// (positions: 1-based line and byte column of the start tag concerned).
@Suite struct SourceFileRulesTests {

    @Test(arguments: ["bad name.plist", "com_example.plist", "-com.example.plist", "com..example.plist", "com.exämple.xml"])
    func fileNameThatIsNotABundleIdentifier(name: String) throws {
        let app = (name as NSString).deletingPathExtension
        let lines = try validate([name: plist("<array/>")])
        #expect(
            lines == [
                "catalog/\(name):1:1: error: '\(app)' is not a bundle identifier; use letters, digits, '.' and '-', such as com.example.game"
            ])
    }

    @Test func feedbackFilesAreNotSources() throws {
        try withCatalog { catalog in
            try catalog.write("com.example.game.plist", plist("<array>\n\t<string>com.example.game.gold</string>\n</array>"))
            // Read as the app's feedback (see FeedbackFileTests), never as a source.
            try catalog.write("com.example.game.feedback.plist", bytes: FeedbackFile().encoded)
            try catalog.write("com.example.tools/a.plist", plist("<array>\n\t<string>com.example.tools.gold</string>\n</array>"))
            try catalog.write("com.example.tools/verdicts.feedback.plist", "not a plist at all")
            let validation = catalog.workflow.validate()
            #expect(validation.diagnostics.map(\.description) == [])
            #expect(validation.catalogs.map(\.app) == ["com.example.game", "com.example.tools"])
            #expect(
                validation.catalogs.map(\.files) == [
                    ["catalog/com.example.game.plist"], ["catalog/com.example.tools/a.plist"],
                ])
        }
    }

    @Test func otherFilesAndHiddenFilesAreIgnored() throws {
        try withCatalog { catalog in
            try catalog.write("com.example.game.plist", plist("<array>\n\t<string>com.example.game.gold</string>\n</array>"))
            try catalog.write("README.md", "# Catalog\n")
            try catalog.write(".com.example.hidden.plist", "garbage")
            try catalog.write("com.example.game.plist~", "garbage")
            #expect(catalog.diagnostics() == [])
        }
    }

    @Test func appDefinedByAFileAndAFolder() throws {
        let lines = try validate([
            "com.example.game.plist": plist("<array/>"),
            "com.example.game/a.plist": plist("<array/>"),
        ])
        #expect(
            lines == [
                "catalog/com.example.game.plist:1:1: error: app 'com.example.game' is already defined by catalog/com.example.game; use one file or one folder per app"
            ])
    }

    @Test func folderWithoutSources() throws {
        try withCatalog { catalog in
            try catalog.write("com.example.game/notes.txt", "nothing here")
            #expect(
                catalog.diagnostics() == [
                    "catalog:1:1: warning: no apps found; add <bundle-id>.plist, <bundle-id>.xml or a <bundle-id>/ folder",
                    "catalog/com.example.game:1:1: warning: folder has no .plist or .xml sources",
                ])
        }
    }

    @Test func emptyCatalogDirectory() throws {
        try withCatalog { catalog in
            #expect(
                catalog.diagnostics() == [
                    "catalog:1:1: warning: no apps found; add <bundle-id>.plist, <bundle-id>.xml or a <bundle-id>/ folder"
                ])
        }
    }

    @Test func missingCatalogDirectory() throws {
        try withCatalog { catalog in
            try FileManager.default.removeItem(at: catalog.catalogDirectory)
            #expect(catalog.diagnostics() == ["catalog:1:1: error: cannot read the catalog directory"])
        }
    }

    @Test(
        arguments: [
            ([0x1F, 0x8B, 0x08, 0x00, 0x00], "file is gzip-compressed; decompress it (gunzip) and keep the plain XML in the catalog"),
            (
                Array("bplist00".utf8) + [0xD1, 0x01, 0x02],
                "binary property list is not supported; convert it to XML with 'plutil -convert xml1 catalog/com.example.game.plist' (macOS) or 'plistutil -i IN -o OUT -f xml' (libplist-utils)"
            ),
            ([], "file is empty"),
            ([0xFF, 0xFE, 0x3C, 0x00, 0x3F, 0x00], "file is UTF-16; save it as UTF-8"),
            (
                Array("<?xml version=\"1.0\" encoding=\"ISO-8859-1\"?>\n<plist/>".utf8),
                "encoding 'ISO-8859-1' is not supported; save the file as UTF-8"
            ),
        ] as [([UInt8], String)])
    func filesThatAreNotXMLText(bytes: [UInt8], message: String) throws {
        try withCatalog { catalog in
            try catalog.write("com.example.game.plist", bytes: bytes)
            #expect(catalog.diagnostics() == ["\(RuleFixtures.game):1:1: error: \(message)"])
        }
    }
}
