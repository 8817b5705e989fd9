import Foundation
import Logging
import NIOSSL
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// `--tls-certificate` and `--tls-key`: PEM files, read at start and again, at a handshake, when
/// either file has changed (looked at no more than once a second), so that a renewed certificate
/// is served without a restart. A renewal that does not load (half written, say) leaves the
/// previous certificate in use until it does.
public final class ReloadingCertificate: Sendable {
    let certificatePath: String
    let keyPath: String
    private let logger: Logger
    private let state: Mutex<State>

    private struct State {
        var signature: String
        var chain: [NIOSSLCertificate]
        var key: NIOSSLPrivateKey
        var checked: ContinuousClock.Instant
    }

    /// Loads both files; throws what is wrong with them.
    public init(certificate: String, key: String, logger: Logger) throws {
        certificatePath = certificate
        keyPath = key
        self.logger = logger
        let (chain, privateKey) = try Self.load(certificate, key)
        state = Mutex(State(signature: Self.signature(certificate, key), chain: chain, key: privateKey, checked: .now))
    }

    private static func load(_ certificate: String, _ key: String) throws -> ([NIOSSLCertificate], NIOSSLPrivateKey) {
        let chain = try NIOSSLCertificate.fromPEMFile(certificate)
        guard !chain.isEmpty else { throw TLSFileError(description: "\(certificate) holds no PEM certificate") }
        return (chain, try NIOSSLPrivateKey(file: key, format: .pem))
    }

    /// Each file's inode, size and modification time: a renewal replaces or rewrites them.
    private static func signature(_ paths: String...) -> String {
        paths.map { path in
            var info = stat()
            guard stat(path, &info) == 0 else { return "missing" }
            return "\(info.st_ino):\(info.st_size):\(info.st_mtim.tv_sec).\(info.st_mtim.tv_nsec)"
        }.joined(separator: "|")
    }

    /// The certificate chain and key to present now.
    func current() -> (chain: [NIOSSLCertificate], key: NIOSSLPrivateKey) {
        state.withLock { state in
            let now = ContinuousClock.now
            if now - state.checked >= .seconds(1) {
                state.checked = now
                let signature = Self.signature(certificatePath, keyPath)
                if signature != state.signature {
                    do {
                        (state.chain, state.key) = try Self.load(certificatePath, keyPath)
                        state.signature = signature
                        logger.info("tls.reloaded", metadata: ["tls.certificate": "\(certificatePath)"])
                    } catch {
                        logger.error("tls.reload.failed", metadata: ["error": "\(error)"])
                    }
                }
            }
            return (state.chain, state.key)
        }
    }

    /// A server configuration whose every handshake presents the current certificate.
    func tlsConfiguration() -> TLSConfiguration {
        let (chain, key) = current()
        var configuration = TLSConfiguration.makeServerConfiguration(
            certificateChain: chain.map { .certificate($0) }, privateKey: .privateKey(key))
        configuration.sslContextCallback = { _, promise in
            let (chain, key) = self.current()
            var override = NIOSSLContextConfigurationOverride()
            override.certificateChain = chain.map { .certificate($0) }
            override.privateKey = .privateKey(key)
            promise.succeed(override)
        }
        return configuration
    }
}

struct TLSFileError: Error, CustomStringConvertible {
    let description: String
}
