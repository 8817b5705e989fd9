import CatalogTestSupport
import Foundation
import Testing

/// `catalog keys`, `catalog build --signing-key`, `catalog sign` and `catalog verify` as an
/// operator runs them: private keys 0600 and never printed or published, keys never overwritten,
/// the key from CATALOG_SIGNING_KEY, a revocation carried by every later signature, and verify's
/// exit status.
@Suite struct SigningCommandTests {
    static let feed = "public/v1/apps/com.example.app/products.json"

    @Test func keysAreMadeOnceWithPrivateFilesReadableByTheOwnerOnly() async throws {
        try await CommandTests.withWorkspace { workspace in
            let made = try await workspace.run("keys", "create", "--directory", "keys")
            #expect(made.status == 0, "\(made.stderr)")
            for name in ["root.jwk", "signing.jwk"] {
                let attributes = try FileManager.default.attributesOfItem(
                    atPath: workspace.root.appendingPathComponent("keys/\(name)").path)
                #expect((attributes[.posixPermissions] as? Int) == 0o600, "\(name)")
                let d = try #require(workspace.read("keys/\(name)")).split(separator: "\"d\":\"")[1].prefix(43)
                #expect(!made.stdout.contains(d) && !made.stderr.contains(d), "a private key was printed")
            }
            #expect(workspace.read("keys/root.pub.jwk")?.contains("\"d\"") == false)
            let again = try await workspace.run("keys", "create", "--directory", "keys")
            #expect(again.status != 0)
            #expect(again.stderr.contains("never overwritten"))
        }
    }

    @Test func buildSignsWithTheKeyFromTheEnvironmentAndVerifyChecksIt() async throws {
        try await CommandTests.withWorkspace { workspace in
            try workspace.write("catalog/com.example.app.plist", seedCatalog)
            #expect(try await workspace.run("keys", "create", "--directory", "keys").status == 0)
            let build = try await CommandTests.run(
                ["build", "--store", "sqlite:var/catalog.sqlite"], in: workspace.root,
                environment: ["CATALOG_SIGNING_KEY": workspace.root.appendingPathComponent("keys/signing.jwk").path])
            #expect(build.status == 0, "\(build.stderr)")
            #expect(workspace.exists(Self.feed + ".jws"))
            let verified = try await workspace.run("verify", Self.feed, "--root-key", "keys/root.pub.jwk")
            #expect(verified.status == 0, "\(verified.stderr)")
            #expect(verified.stdout.contains("app: com.example.app"))
            #expect(verified.stdout.contains("revision: 1"))
            // Another root: not trusted.
            #expect(try await workspace.run("keys", "create", "--directory", "other").status == 0)
            let stranger = try await workspace.run("verify", Self.feed, "--root-key", "other/root.pub.jwk")
            #expect(stranger.status == 1)
            #expect(stranger.stderr.contains("untrustedKey"))
            // No key file of any kind under public/.
            for (path, data) in workspace.files() where path.hasPrefix("public") {
                #expect(!String(decoding: data, as: UTF8.self).contains("\"d\":"), "\(path)")
            }
        }
    }

    @Test func aRevocationIsCarriedByEverySignatureMadeAfterIt() async throws {
        try await CommandTests.withWorkspace { workspace in
            try workspace.write("catalog/com.example.app.plist", seedCatalog)
            #expect(try await workspace.run("keys", "create", "--directory", "keys").status == 0)
            #expect(
                try await workspace.run("build", "--signing-key", "keys/signing.jwk", "--store", "sqlite:var/c.sqlite").status == 0)
            let rotated = try await workspace.run(
                "keys", "rotate", "--root", "keys/root.jwk", "--output", "keys/signing-2.jwk", "--previous", "keys/signing.jwk")
            #expect(rotated.status == 0, "\(rotated.stderr)")
            let shownOld = try await workspace.run("keys", "show", "keys/signing.jwk").stdout
            let old = String(try #require(shownOld.split(separator: "\n").first?.split(separator: " ").last))
            #expect(shownOld.hasPrefix("private key \(old)\ncertified from "))
            let revoked = try await workspace.run(
                "keys", "revoke", old, "--root", "keys/root.jwk", "--signing-key", "keys/signing-2.jwk")
            #expect(revoked.status == 0, "\(revoked.stderr)")
            // Refused: a key cannot revoke itself.
            #expect(
                try await workspace.run("keys", "revoke", old, "--root", "keys/root.jwk", "--signing-key", "keys/signing.jwk").status
                    != 0)
            let signed = try await workspace.run("sign", "--signing-key", "keys/signing-2.jwk")
            #expect(signed.status == 0, "\(signed.stderr)")
            #expect(signed.stdout.contains("signatures written"))
            let shown = try await workspace.run("keys", "show", "keys/signing-2.jwk")
            #expect(shown.stdout.contains("carries revocations version 1: \(old)"))
            let verified = try await workspace.run("verify", Self.feed, "--root-key", "keys/root.pub.jwk")
            #expect(verified.status == 0)
            #expect(!verified.stdout.contains("signing key: \(old)"))
            // With --refresh, a signature far from its expiry is left as it is.
            let refreshed = try await workspace.run("sign", "--refresh", "--signing-key", "keys/signing-2.jwk")
            #expect(refreshed.stdout.hasPrefix("0 signatures written"), "\(refreshed.stdout)")
            // One key id in 64 begins with '-' (base64url): it is a key id, not an option.
            let dashed = try await workspace.run(
                "keys", "revoke", "-9HqeO9_1OGdF4XX", "--root", "keys/root.jwk", "--signing-key", "keys/signing-2.jwk")
            #expect(dashed.status == 0, "\(dashed.stderr)")
            #expect(dashed.stdout.contains("-9HqeO9_1OGdF4XX"), "\(dashed.stdout)")
        }
    }

    @Test func aTamperedFeedFailsVerification() async throws {
        try await CommandTests.withWorkspace { workspace in
            try workspace.write("catalog/com.example.app.plist", seedCatalog)
            #expect(try await workspace.run("keys", "create", "--directory", "keys").status == 0)
            #expect(
                try await workspace.run("build", "--signing-key", "keys/signing.jwk", "--store", "sqlite:var/c.sqlite").status == 0)
            let path = workspace.root.appendingPathComponent(Self.feed)
            try FileManager.default.removeItem(at: path)
            try workspace.write(Self.feed, #"["com.example.evil"]"#)
            let verified = try await workspace.run("verify", Self.feed, "--root-key", "keys/root.pub.jwk")
            #expect(verified.status == 1)
            #expect(verified.stderr.contains("badSignature"))
            let unsigned = try await workspace.run("verify", "catalog/com.example.app.plist", "--root-key", "keys/root.pub.jwk")
            #expect(unsigned.status == 1)
            #expect(unsigned.stderr.contains("no signature"))
        }
    }

    /// `catalog serve --signing-key` on a tree published unsigned: it signs the current feeds at
    /// start and serves them with their signatures.
    @Test func serveSignsWhatWasPublishedUnsignedAndServesTheSignatures() async throws {
        try await CommandTests.withWorkspace { workspace in
            try workspace.write("catalog/com.example.app.plist", seedCatalog)
            #expect(try await workspace.run("keys", "create", "--directory", "keys").status == 0)
            #expect(try await workspace.run("build", "--store", "sqlite:var/c.sqlite").status == 0)
            #expect(!workspace.exists(Self.feed + ".jws"))
            let server = try ServeProcess(in: workspace, ["--store", "sqlite:var/c.sqlite", "--signing-key", "keys/signing.jwk"])
            defer { if server.process.isRunning { server.process.terminate() } }
            let url = server.url("/v1/apps/com.example.app/products.json").absoluteString
            var verified = try await workspace.run("verify", url, "--root-key", "keys/root.pub.jwk")
            for _ in 0..<100 where verified.status != 0 {
                try await Task.sleep(for: .milliseconds(100))
                verified = try await workspace.run("verify", url, "--root-key", "keys/root.pub.jwk")
            }
            #expect(verified.status == 0, "\(verified.stderr)")
            #expect(verified.stdout.contains("app: com.example.app"))
            #expect(workspace.exists(Self.feed + ".jws"), "the static tree is signed too")
        }
    }
}
