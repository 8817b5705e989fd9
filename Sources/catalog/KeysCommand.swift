import ArgumentParser
import CatalogKit
import FeedSigning
import Foundation
import Time

#if canImport(Glibc)
    import Glibc
#endif

/// `catalog keys`: the offline root key, the signing keys it certifies, and revocations.
struct KeysCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "keys",
        abstract: "Make and manage the Ed25519 keys that sign feeds.",
        discussion: """
            The root key stays offline; apps pin its public half (root.pub.jwk). Signing keys are \
            certified by the root with an expiry, and are what 'catalog build --signing-key' uses. \
            Private keys are written 0600 and never printed.
            """,
        subcommands: [Create.self, Rotate.self, Revoke.self, Show.self]
    )

    static let certificateHelp = ArgumentHelp(
        "How long the signing key's certificate is valid (365d, 26w, …). Default: 365d.", valueName: "interval")

    struct Create: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "create",
            abstract:
                "Make a root key and a first signing key it certifies: root.jwk (keep offline), root.pub.jwk (pin in the app), signing.jwk."
        )

        @Option(
            help: ArgumentHelp("The folder to write the three files in; none of them may exist yet. Default: keys.", valueName: "directory")
        )
        var output: String?

        /// The flag's name before issue 27 (`--output`, as `rotate` and `export` name where they write).
        @Option(name: .customLong("directory"), help: .hidden)
        var deprecatedDirectory: String?

        @Option(help: KeysCommand.certificateHelp)
        var certificateLifetime: Interval?

        func run() throws {
            let folder = URL(fileURLWithPath: output ?? deprecatedDirectory ?? "keys", isDirectory: true)
            let files = ["root.jwk", "root.pub.jwk", "signing.jwk"].map { folder.appendingPathComponent($0) }
            for file in files where FileManager.default.fileExists(atPath: file.path) {
                throw ValidationError("\(file.path) exists; keys are never overwritten")
            }
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
            let root = Ed25519PrivateKey()
            let signing = KeysCommand.certify(Ed25519PrivateKey(), by: root, lifetime: certificateLifetime, revocations: nil)
            try KeysCommand.writePrivate(root.jwk, to: files[0])
            try KeysCommand.writeNew(root.publicKey.jwk, to: files[1], mode: 0o644)
            try KeysCommand.writePrivate(signing.jwk, to: files[2])
            print("root key \(root.kid): \(files[0].path) (keep it offline), \(files[1].path) (pin it in the app)")
            print("signing key \(signing.kid): \(files[2].path), \(KeysCommand.validity(signing))")
        }
    }

    struct Rotate: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "rotate",
            abstract:
                "Make a new signing key certified by the root; the old one stays valid until its certificate expires or it is revoked.")

        @Option(help: ArgumentHelp("The root key file (root.jwk). Required.", valueName: "file"))
        var rootKey: String?

        /// The flag's name before issue 27 (`--root-key`, as `fetch` and `verify` name the root).
        @Option(name: .customLong("root"), help: .hidden)
        var deprecatedRoot: String?

        /// `--root-key`, or the deprecated `--root`.
        var root: String {
            get throws {
                guard let file = rootKey ?? deprecatedRoot else { throw ValidationError("give the root key file with --root-key") }
                return file
            }
        }

        @Option(help: ArgumentHelp("The new signing key's file; must not exist. Required.", valueName: "file"))
        var output: String

        @Option(
            help: ArgumentHelp(
                "The signing key being replaced: its revocation statement, if any, carries over. Default: none.", valueName: "file"))
        var previous: String?

        @Option(help: KeysCommand.certificateHelp)
        var certificateLifetime: Interval?

        func run() throws {
            let rootKey = try KeysCommand.read(try root)
            let revocations = try previous.map { try KeysCommand.read($0).revocations } ?? nil
            let signing = KeysCommand.certify(Ed25519PrivateKey(), by: rootKey, lifetime: certificateLifetime, revocations: revocations)
            try KeysCommand.writePrivate(signing.jwk, to: URL(fileURLWithPath: output))
            print("signing key \(signing.kid): \(output), \(KeysCommand.validity(signing))")
        }
    }

    struct Revoke: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "revoke",
            abstract: "Revoke signing keys: a root-signed statement, written into the signing key file that publishes from now on.",
            discussion: """
                Every signature made with that file carries the statement, and a client that has seen it \
                refuses the revoked keys from then on. Rebuild with 'catalog sign' so that the current \
                feeds carry it at once.
                """)

        // A key id is base64url, so one in 64 begins with '-': it must still read as a key id,
        // not as an unknown option.
        @Argument(parsing: .allUnrecognized, help: "The key ids to revoke (as 'catalog keys show' prints them).")
        var kids: [String]

        @Option(help: ArgumentHelp("The root key file (root.jwk). Required.", valueName: "file"))
        var rootKey: String?

        /// The flag's name before issue 27 (`--root-key`, as `fetch` and `verify` name the root).
        @Option(name: .customLong("root"), help: .hidden)
        var deprecatedRoot: String?

        /// `--root-key`, or the deprecated `--root`.
        var root: String {
            get throws {
                guard let file = rootKey ?? deprecatedRoot else { throw ValidationError("give the root key file with --root-key") }
                return file
            }
        }

        @Option(
            help: ArgumentHelp(
                "The signing key file that publishes from now on; it is rewritten with the statement. Required.", valueName: "file"))
        var signingKey: String

        func run() throws {
            for kid in kids where !KeyID.isValid(kid) {
                throw ValidationError("'\(kid)' is not a key id such as 'catalog keys show' prints")
            }
            let rootKey = try KeysCommand.read(try root)
            let signing = try KeysCommand.read(signingKey)
            guard !kids.contains(signing.kid) else { throw ValidationError("\(signingKey) holds key \(signing.kid) itself; rotate first") }
            let earlier = try signing.revocations.map { try KeyRevocations.read($0) }
            let revoked = Set(earlier?.revoked ?? []).union(kids)
            let statement = KeyRevocations.issue(Array(revoked), version: (earlier?.version ?? 0) + 1, by: rootKey, now: Date())
            guard let certificate = signing.certificate else { throw ValidationError("\(signingKey) is not a certified signing key") }
            try KeysCommand.writePrivate(
                signing.certified(certificate, revocations: statement).jwk, to: URL(fileURLWithPath: signingKey), replacing: true)
            print(
                "revoked \(revoked.sorted().joined(separator: ", ")) (statement version \((earlier?.version ?? 0) + 1)), carried by \(signingKey)"
            )
        }
    }

    struct Show: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "show", abstract: "Print what a key file holds, never its private part.")

        @Argument(help: "A key file.")
        var file: String

        func run() throws {
            guard let data = FileManager.default.contents(atPath: file) else { throw ValidationError("cannot read \(file)") }
            if let key = try? Ed25519PrivateKey(jwk: data) {
                print("private key \(key.kid)")
                if key.certificate != nil { print(KeysCommand.validity(key)) }
                if let revocations = key.revocations.flatMap({ try? KeyRevocations.read($0) }) {
                    print("carries revocations version \(revocations.version): \(revocations.revoked.joined(separator: ", "))")
                }
            } else {
                do {
                    print("public key \(try Ed25519PublicKey(jwk: data).kid)")
                } catch {
                    throw ValidationError("\(file): \(error.message)")
                }
            }
        }
    }

    static func read(_ path: String) throws -> Ed25519PrivateKey {
        guard let data = FileManager.default.contents(atPath: path) else { throw ValidationError("cannot read \(path)") }
        do { return try Ed25519PrivateKey(jwk: data) } catch { throw ValidationError("\(path): \(error.message)") }
    }

    static func certify(_ key: Ed25519PrivateKey, by root: Ed25519PrivateKey, lifetime: Interval?, revocations: String?)
        -> Ed25519PrivateKey
    {
        let certificate = KeyCertificate.issue(
            for: key.publicKey, by: root, now: Date(), lifetime: TimeInterval(lifetime?.seconds ?? 365 * 86_400))
        return key.certified(certificate, revocations: revocations)
    }

    static func validity(_ key: Ed25519PrivateKey) -> String {
        guard let certificate = key.certificate.flatMap({ try? KeyCertificate.read($0) }) else { return "no certificate" }
        return
            "certified from \(Timestamp(secondsSince1970: certificate.iat).iso8601) until \(Timestamp(secondsSince1970: certificate.exp).iso8601)"
    }

    /// A private key file: created 0600 before a byte is written, never replacing one unless asked.
    static func writePrivate(_ data: Data, to url: URL, replacing: Bool = false) throws {
        try writeNew(data, to: url, mode: 0o600, replacing: replacing)
    }

    /// A key file through ``KeyFile``: its mode from the first byte, fsynced, and linked into
    /// place only if nothing is there (renamed over the old file when `replacing`).
    static func writeNew(_ data: Data, to url: URL, mode: mode_t, replacing: Bool = false) throws {
        do {
            if replacing {
                try KeyFile.replace(data, at: url, mode: mode)
            } else {
                try KeyFile.create(data, at: url, mode: mode)
            }
        } catch {
            throw ValidationError(error.description)
        }
    }
}
