import Content
import Foundation
import Testing

/// The content-addressed blob store (docs/content.md, "The blob store"), on real temporary folders.
@Suite struct BlobStoreTests {
    /// A fresh folder for one test, removed after it.
    static func withFolder<T>(_ body: (URL) throws -> T) throws -> T {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("content-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        return try body(folder)
    }

    /// Every regular file under `folder`, relative to it, sorted.
    static func files(under folder: URL) -> [String] {
        guard let walker = FileManager.default.enumerator(atPath: folder.path) else { return [] }
        var files: [String] = []
        while let path = walker.nextObject() as? String {
            var isDirectory: ObjCBool = false
            if FileManager.default.fileExists(atPath: folder.appendingPathComponent(path).path, isDirectory: &isDirectory),
                !isDirectory.boolValue
            {
                files.append(path)
            }
        }
        return files.sorted()
    }

    /// A file in `folder` for each of `contents`, with the digest a plan would have read from it.
    static func sources(in folder: URL, _ contents: [String]) throws -> [(url: URL, expected: ContentDigest)] {
        try contents.enumerated().map { index, text in
            let url = folder.appendingPathComponent("file-\(index)")
            try Data(text.utf8).write(to: url)
            return (url, ContentDigest.of(Data(text.utf8)))
        }
    }

    static func inode(_ url: URL) throws -> UInt64 {
        let attributes = try FileManager.default.attributesOfItem(atPath: url.path)
        return (attributes[.systemFileNumber] as? NSNumber)?.uint64Value ?? 0
    }

    @Test func storesUnderItsDigestAndReadsBack() throws {
        try Self.withFolder { folder in
            let store = BlobStore(root: folder.appendingPathComponent("content"))
            let data = Data("the January issue".utf8)
            let receipt = try store.put(data)
            let digest = ContentDigest.of(data)
            #expect(receipt == BlobStore.Receipt(digest: digest, size: Int64(data.count), written: true))
            #expect(store.url(of: digest).path == folder.path + "/content/sha256/\(digest.hex.prefix(2))/\(digest.hex)")
            #expect(try Data(contentsOf: store.url(of: digest)) == data)
            #expect(store.contains(digest))
            #expect(Self.files(under: folder.appendingPathComponent("content")) == ["sha256/\(digest.hex.prefix(2))/\(digest.hex)"])
        }
    }

    @Test func aLargeFileIsCopiedAndHashedInChunks() throws {
        try Self.withFolder { folder in
            // Three chunks and a bit, so the chunk boundaries are crossed.
            var bytes = [UInt8](repeating: 0, count: 3 * (1 << 20) + 12_345)
            for index in bytes.indices { bytes[index] = UInt8(truncatingIfNeeded: index &* 2_654_435_761 >> 13) }
            let source = folder.appendingPathComponent("issue.pdf")
            try Data(bytes).write(to: source)
            let store = BlobStore(root: folder.appendingPathComponent("content"))
            let receipt = try store.put(contentsOf: source)
            #expect(receipt.digest == ContentDigest.of(bytes))
            #expect(receipt.size == Int64(bytes.count))
            #expect(receipt.written)
            #expect(try Data(contentsOf: store.url(of: receipt.digest)) == Data(bytes))
            #expect(try store.verify(receipt.digest))
        }
    }

    @Test func anUnchangedFileIsNotCopiedTwice() throws {
        try Self.withFolder { folder in
            let source = folder.appendingPathComponent("levels.pack")
            try Data("levels 1 to 10".utf8).write(to: source)
            let store = BlobStore(root: folder.appendingPathComponent("content"))
            let first = try store.put(contentsOf: source)
            let blob = store.url(of: first.digest)
            let inode = try Self.inode(blob)

            // The same bytes again, from the file or from memory, under another name too.
            let renamed = folder.appendingPathComponent("copy.pack")
            try FileManager.default.copyItem(at: source, to: renamed)
            let again = try store.put(contentsOf: renamed)
            let fromMemory = try store.put(Data("levels 1 to 10".utf8))
            #expect(!again.written && !fromMemory.written)
            #expect(again.digest == first.digest && fromMemory.digest == first.digest)
            #expect(try Self.inode(blob) == inode)
            #expect(Self.files(under: folder.appendingPathComponent("content")).count == 1)

            // A changed file is a new blob beside the old one.
            try Data("levels 1 to 11".utf8).write(to: source)
            let changed = try store.put(contentsOf: source)
            #expect(changed.written && changed.digest != first.digest)
            #expect(try store.list() == [first.digest, changed.digest].sorted())
        }
    }

    @Test func bytesThatAreNotTheDigestExpectedAreNeverStored() throws {
        try Self.withFolder { folder in
            let store = BlobStore(root: folder.appendingPathComponent("content"))
            let source = folder.appendingPathComponent("issue.pdf")
            try Data("what is on disk".utf8).write(to: source)
            let promised = ContentDigest.of(Data("what the manifest says".utf8))
            let error = #expect(throws: BlobStoreError.self) { try store.put(contentsOf: source, expected: promised) }
            #expect(error?.message.contains("not the \(promised.hex) expected") == true)
            #expect(throws: BlobStoreError.self) { try store.put(Data("what is on disk".utf8), expected: promised) }
            #expect(try store.list().isEmpty)
            #expect(!store.contains(promised))
            #expect(Self.files(under: folder.appendingPathComponent("content")).isEmpty)
        }
    }

    /// Many files at once: each stored once under its digest, what is stored already left alone,
    /// nothing left aside; a second call writes nothing.
    @Test func manyFilesAreStoredTogether() throws {
        try Self.withFolder { folder in
            let store = BlobStore(root: folder.appendingPathComponent("content"))
            let sources = try Self.sources(in: folder, (0..<40).map { "file \($0 % 30)" })  // ten digests listed twice
            let before = try store.put(contentsOf: sources[0].url)
            let receipts = try store.putAll(contentsOf: sources)
            #expect(receipts.map(\.digest) == sources.map(\.expected))
            #expect(receipts.filter(\.written).count == 29, "30 digests, one already stored")
            #expect(!receipts[0].written && receipts[0].digest == before.digest && receipts[0].size == before.size)
            for (receipt, source) in zip(receipts, sources) {
                #expect(receipt.size == Int64(try Data(contentsOf: source.url).count))
            }
            for source in sources { #expect(try Data(contentsOf: store.url(of: source.expected)) == Data(contentsOf: source.url)) }
            #expect(try store.list() == Set(sources.map(\.expected)).sorted())
            #expect(Self.files(under: folder.appendingPathComponent("content/tmp")).isEmpty)
            #expect(try store.putAll(contentsOf: sources).allSatisfy { !$0.written })
        }
    }

    /// A file that is not what its plan read is refused: nothing of the call is stored, and no copy
    /// is left aside.
    @Test func manyFilesWithOneChangedStoreNothingWrong() throws {
        try Self.withFolder { folder in
            let store = BlobStore(root: folder.appendingPathComponent("content"))
            let sources = try Self.sources(in: folder, (0..<8).map { "file \($0)" })
            try Data("changed after planning".utf8).write(to: sources[5].url)
            let error = #expect(throws: BlobStoreError.self) { try store.putAll(contentsOf: sources) }
            #expect(error?.message.contains("not the \(sources[5].expected.hex) expected") == true)
            #expect(!store.contains(sources[5].expected))
            #expect(Self.files(under: folder.appendingPathComponent("content/tmp")).isEmpty)
            #expect(try store.list().isEmpty, "the seven good files wait for the build that is not refused")
        }
    }

    @Test func aDamagedBlobIsFoundAndATruncatedOneReplaced() throws {
        try Self.withFolder { folder in
            let store = BlobStore(root: folder.appendingPathComponent("content"))
            let data = Data("the February issue".utf8)
            let digest = try store.put(data).digest
            // The same size, other bytes: `put` trusts a blob of the right size; `verify` reads it.
            try Data("the FEBRUARY issue".utf8).write(to: store.url(of: digest))
            #expect(try !store.verify(digest))
            // Another size: `put` writes it again.
            try Data("the Feb".utf8).write(to: store.url(of: digest))
            #expect(try store.put(data).written)
            #expect(try store.verify(digest))
        }
    }

    @Test func listSkipsWhatIsNotABlob() throws {
        try Self.withFolder { folder in
            let root = folder.appendingPathComponent("content")
            let store = BlobStore(root: root)
            let digest = try store.put(Data("a".utf8)).digest
            let other = ContentDigest.of(Data("b".utf8))
            let manager = FileManager.default
            try manager.createDirectory(at: root.appendingPathComponent("sha256/zz"), withIntermediateDirectories: true)
            try Data().write(to: root.appendingPathComponent("sha256/zz/notes.txt"))
            // A valid name in the wrong folder, and a temporary file left by a crash.
            let wrongFolder = digest.hex.hasPrefix("00") ? "01" : "00"
            try manager.createDirectory(at: root.appendingPathComponent("sha256/\(wrongFolder)"), withIntermediateDirectories: true)
            try Data("b".utf8).write(to: root.appendingPathComponent("sha256/\(wrongFolder)/\(other.hex)"))
            try Data().write(to: root.appendingPathComponent("tmp/\(other.hex).1.2"))
            #expect(try store.list() == [digest])
        }
    }

    @Test func temporaryFilesLeftByACrashAreRemovedOnceOld() throws {
        try Self.withFolder { folder in
            let store = BlobStore(root: folder.appendingPathComponent("content"))
            let digest = try store.put(Data("kept".utf8)).digest
            let temporaries = folder.appendingPathComponent("content/tmp")
            let old = temporaries.appendingPathComponent("\(digest.hex).1.1")
            let recent = temporaries.appendingPathComponent("\(digest.hex).1.2")
            try Data("half a blob".utf8).write(to: old)
            try Data("a blob being written".utf8).write(to: recent)
            let now = Date()
            try FileManager.default.setAttributes([.modificationDate: now.addingTimeInterval(-7200)], ofItemAtPath: old.path)
            try FileManager.default.setAttributes([.modificationDate: now], ofItemAtPath: recent.path)
            #expect(try store.removeTemporaryFiles(writtenBefore: now.addingTimeInterval(-3600)) == 1)
            #expect(Self.files(under: temporaries) == [recent.lastPathComponent])
            #expect(try store.list() == [digest])
        }
    }

    @Test func pruneKeepsWhatAnyKeptManifestNames() throws {
        try Self.withFolder { folder in
            let store = BlobStore(root: folder.appendingPathComponent("content"))
            let v1 = try store.put(Data("levels v1".utf8))
            let v2 = try store.put(Data("levels v2".utf8))
            let art = try store.put(Data("cover art".utf8))
            let orphan = try store.put(Data("removed from the catalog".utf8))
            func manifest(_ levels: BlobStore.Receipt) throws -> ContentManifest {
                try ContentManifest(items: [
                    ContentManifest.Item(
                        id: "levels", product: "levels",
                        files: [
                            .init(path: "levels.pack", size: levels.size, sha256: levels.digest),
                            .init(path: "art/cover.png", size: art.size, sha256: art.digest),
                        ])
                ])
            }
            let revision1 = try manifest(v1)
            let revision2 = try manifest(v2)
            // Both revisions kept: only the blob neither names goes.
            #expect(try store.prune(keepingNamesIn: [revision1, revision2]) == [orphan.digest])
            #expect(try store.list() == [v1.digest, v2.digest, art.digest].sorted())
            // Revision 1 dropped: its old levels go, the art both share stays.
            #expect(try store.prune(keepingNamesIn: [revision2]) == [v1.digest])
            #expect(try store.list() == [v2.digest, art.digest].sorted())
            #expect(try store.prune(keepingNamesIn: [revision2]).isEmpty)
        }
    }
}
