import FeedSigning
import Foundation
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// Key files (`catalog keys`): mode 0600 from the first byte whatever the umask, never written over
/// another file, replaced only on purpose and then atomically. Before `KeyFile`, the bytes were
/// written into a file of the umask's mode (0644 under 022, seen with strace: `openat(…, 0666)`,
/// the write, then `chmod(…, 0600)`), so the key was readable by others until the chmod.
@Suite struct KeyFileTests {
    static func folder() throws -> URL {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("keyfile-\(UUID().uuidString)", isDirectory: true)
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        return url
    }

    static func mode(_ url: URL) throws -> Int {
        try #require(try FileManager.default.attributesOfItem(atPath: url.path)[.posixPermissions] as? Int)
    }

    /// Under umask 0, open(2) alone would create 0666 (and 0644 under 022): the mode must not
    /// depend on it. umask is process-wide, so it is set back at once.
    @Test func aPrivateKeyIs0600WhateverTheUmask() throws {
        let folder = try Self.folder()
        defer { try? FileManager.default.removeItem(at: folder) }
        for (index, mask) in [mode_t(0), 0o022, 0o077].enumerated() {
            let url = folder.appendingPathComponent("key-\(index).jwk")
            let previous = umask(mask)
            let result = Result { () throws(KeyFileError) in try KeyFile.create(Data("secret".utf8), at: url) }
            umask(previous)
            try result.get()
            #expect(try Self.mode(url) == 0o600, "umask \(String(mask, radix: 8))")
            #expect(try Data(contentsOf: url) == Data("secret".utf8))
        }
        // A public key is 0644, also under a umask that would narrow it.
        let previous = umask(0o077)
        let result = Result { () throws(KeyFileError) in
            try KeyFile.create(Data("public".utf8), at: folder.appendingPathComponent("root.pub.jwk"), mode: 0o644)
        }
        umask(previous)
        try result.get()
        #expect(try Self.mode(folder.appendingPathComponent("root.pub.jwk")) == 0o644)
        // Nothing is left beside the keys.
        #expect(
            try FileManager.default.contentsOfDirectory(atPath: folder.path).sorted() == [
                "key-0.jwk", "key-1.jwk", "key-2.jwk", "root.pub.jwk",
            ])
    }

    @Test func anExistingKeyIsNeverOverwritten() throws {
        let folder = try Self.folder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let url = folder.appendingPathComponent("signing.jwk")
        try KeyFile.create(Data("first".utf8), at: url)
        #expect(throws: KeyFileError.self) { try KeyFile.create(Data("second".utf8), at: url) }
        #expect(try Data(contentsOf: url) == Data("first".utf8))
        do {
            try KeyFile.create(Data("second".utf8), at: url)
        } catch {
            #expect(error.description.contains("never overwritten"))
        }
        // Nor is a symbolic link followed or replaced, dangling or not.
        let link = folder.appendingPathComponent("linked.jwk")
        try FileManager.default.createSymbolicLink(atPath: link.path, withDestinationPath: folder.appendingPathComponent("elsewhere").path)
        #expect(throws: KeyFileError.self) { try KeyFile.create(Data("secret".utf8), at: link) }
        #expect(!FileManager.default.fileExists(atPath: folder.appendingPathComponent("elsewhere").path))
        #expect(try FileManager.default.contentsOfDirectory(atPath: folder.path).sorted() == ["linked.jwk", "signing.jwk"])
    }

    @Test func aReplacementKeepsTheModeAndReplacesAtomically() throws {
        let folder = try Self.folder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let url = folder.appendingPathComponent("signing.jwk")
        try KeyFile.create(Data("first".utf8), at: url)
        let previous = umask(0)
        let result = Result { () throws(KeyFileError) in try KeyFile.replace(Data("second".utf8), at: url) }
        umask(previous)
        try result.get()
        #expect(try Data(contentsOf: url) == Data("second".utf8))
        #expect(try Self.mode(url) == 0o600)
        #expect(try FileManager.default.contentsOfDirectory(atPath: folder.path) == ["signing.jwk"])
    }
}
