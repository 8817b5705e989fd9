import ArgumentParser
import CatalogKit
import FeedSigning
import Foundation
import Time

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// `catalog verify`: what an app's CatalogClient checks, from the terminal.
struct VerifyCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "verify",
        abstract: "Check a feed and its signature against a root public key, and print what it is bound to.",
        discussion: """
            A URL is fetched as an app does (the Catalog-Signature header, else the .jws beside the \
            feed); a FILE is read with FILE.jws beside it (a .gz copy is decompressed first). The \
            app and feed kind come from the URL or path (v1/apps/<app>/<feed>), the variant from \
            the URL's platform and appVersion. Exit status: 0 verified, 1 not, 64 on misuse.
            """
    )

    @Argument(help: "A feed URL, or a feed file (products.json, catalog.json, or their .gz copy).")
    var feed: String

    @Option(help: ArgumentHelp("The root public key (root.pub.jwk); repeatable. Required.", valueName: "file"))
    var rootKey: [String]

    @Option(help: ArgumentHelp("The signature file. Default: the one beside FILE (FILE.jws).", valueName: "file"))
    var signature: String?

    @Option(
        help: ArgumentHelp(
            "How long past its expiry a signature is still accepted (1d, 12h; a bare number is seconds). Default: 1d.",
            valueName: "duration"))
    var grace: Seconds?

    func run() async throws {
        let roots = try SigningOptions.rootKeys(rootKey)
        guard !roots.isEmpty else { throw ValidationError("give the root public key with --root-key") }
        let (body, detached, location) = try await load()
        guard let detached else {
            printError("\(feed): no signature (no Catalog-Signature header and no .jws beside it)")
            throw ExitCode(1)
        }
        do {
            let verified = try FeedSignatureVerifier(roots: roots, grace: TimeInterval(grace?.seconds ?? 86_400)).verify(
                detached, over: body, now: Date())
            let claims = verified.claims
            if let location {
                var query = URLComponents(string: feed)?.queryItems ?? []
                // A variant's own path names its platform and band (the band's lower bound selects it).
                if let variant = FeedLocation(path: URLComponents(string: feed)?.path ?? feed)?.variant {
                    let parts = variant.split(separator: "/").map(String.init)
                    query = [
                        URLQueryItem(name: "platform", value: parts[0] == "any" ? nil : parts[0]),
                        URLQueryItem(name: "appVersion", value: parts[1] == "any" ? nil : parts[1]),
                    ]
                }
                guard
                    claims.covers(
                        app: location.app, feed: location.kind, platform: query.first { $0.name == "platform" }?.value,
                        appVersion: query.first { $0.name == "appVersion" }?.value)
                else {
                    throw SignatureError(
                        .wrongBinding,
                        "signed for \(claims.app) \(claims.feed) (\(claims.variants.joined(separator: ", "))), not for this \(location.app) \(location.kind)"
                    )
                }
            }
            print("verified: \(body.count) bytes")
            print("app: \(claims.app)")
            print("feed: \(claims.feed)")
            print("variants: \(claims.variants.joined(separator: ", "))")
            print("revision: \(claims.rev)")
            print("in effect from: \(Timestamp(secondsSince1970: claims.from).iso8601)")
            print("issued: \(Timestamp(secondsSince1970: claims.iat).iso8601)")
            print("expires: \(Timestamp(secondsSince1970: claims.exp).iso8601)")
            print("signing key: \(verified.kid)")
        } catch let error as SignatureError {
            printError("\(feed): \(error)")
            throw ExitCode(1)
        }
    }

    /// The feed's bytes, its signature, and the app and kind its path names.
    private func load() async throws -> (Data, String?, (app: String, kind: String)?) {
        if let url = URL(string: feed), ["http", "https"].contains(url.scheme?.lowercased() ?? "") {
            let (data, response) = try await URLSession.shared.data(from: url)
            guard let http = response as? HTTPURLResponse, http.statusCode == 200 else {
                printError("\(feed): HTTP \((response as? HTTPURLResponse)?.statusCode ?? 0)")
                throw ExitCode(1)
            }
            var signature = http.value(forHTTPHeaderField: FeedSigner.httpHeader)
            if signature == nil, var components = URLComponents(url: url, resolvingAgainstBaseURL: true) {
                components.query = nil
                components.path += ".jws"
                if let signatureURL = components.url, let (jws, answer) = try? await URLSession.shared.data(from: signatureURL),
                    (answer as? HTTPURLResponse)?.statusCode == 200
                {
                    signature = String(decoding: jws, as: UTF8.self)
                }
            }
            return (data, signature?.trimmingCharacters(in: .whitespacesAndNewlines), Self.location(url.path))
        }
        guard var data = FileManager.default.contents(atPath: feed) else { throw ValidationError("cannot read \(feed)") }
        var path = feed
        if path.hasSuffix(".gz") {
            guard let plain = Gzip.decompress([UInt8](data)) else {
                printError("\(feed) is not gzip")
                throw ExitCode(1)
            }
            data = Data(plain)
            path.removeLast(3)
        }
        let signatureFile = signature ?? path + RevisionSignatures.fileExtension
        let detached = FileManager.default.contents(atPath: signatureFile).map {
            String(decoding: $0, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        }
        return (data, detached, Self.location(URL(fileURLWithPath: path).path))
    }

    /// `(app, feed kind, variant)` from a path ending in `v1/apps/<app>/<feed>` or in a variant's
    /// own path, `v1/apps/<app>/variants/<platform>/<band>/<feed>` (not a revision snapshot's).
    static func location(_ path: String) -> (app: String, kind: String)? {
        FeedLocation(path: path).map { ($0.app, $0.feed) }
    }
}
