import CatalogTestSupport
import Crypto
import Foundation
import X509

/// Legacy app receipts made by the tests: Apple's attribute SET, wrapped in PKCS#7 SignedData by
/// openssl the way the App Store writes it (no signed attributes, the content inside), as DER or,
/// like Xcode, as BER with indefinite lengths.
public enum TestReceipts {
    /// One in-app purchase entry's fields.
    public struct InApp: Sendable {
        public var productId: String
        public var transactionId: String
        public var originalTransactionId: String
        public var purchaseDate: String
        public var expiresDate: String?

        public init(
            productId: String, transactionId: String, originalTransactionId: String, purchaseDate: String, expiresDate: String? = nil
        ) {
            self.productId = productId
            self.transactionId = transactionId
            self.originalTransactionId = originalTransactionId
            self.purchaseDate = purchaseDate
            self.expiresDate = expiresDate
        }
    }

    /// The receipt payload: environment (field 0), app id (1), bundle (2), version (3), opaque (4),
    /// device hash (5, made from `deviceIdentifier`), creation date (12), in-app entries (17), then
    /// `extra` attributes as given (``attribute(_:_:)``), for receipts no App Store writes.
    public static func payload(
        environment: String = "Production", appItemId: Int = 1_234_567_890, bundleId: String = "com.example.app",
        creationDate: String = "2025-01-01T00:00:00Z", opaque: [UInt8] = Array(0..<16),
        deviceIdentifier: [UInt8] = Array(repeating: 7, count: 16),
        inApp: [InApp] = [
            InApp(
                productId: "com.example.app.lifetime", transactionId: "1000000001", originalTransactionId: "1000000001",
                purchaseDate: "2024-12-01T10:00:00Z"),
            InApp(
                productId: "com.example.app.pro.monthly", transactionId: "1000000002", originalTransactionId: "1000000002",
                purchaseDate: "2024-12-15T10:00:00Z", expiresDate: "2025-01-15T10:00:00Z"),
        ],
        extra: [[UInt8]] = []
    ) -> [UInt8] {
        let bundle = utf8String(bundleId)
        let hash = Array(Insecure.SHA1.hash(data: deviceIdentifier + opaque + bundle))
        var attributes: [[UInt8]] = [
            attribute(0, utf8String(environment)),
            attribute(1, integer(appItemId)),
            attribute(2, bundle),
            attribute(3, utf8String("42")),
            attribute(4, opaque),
            attribute(5, hash),
            attribute(12, ia5String(creationDate)),
            attribute(19, utf8String("1.0")),
        ]
        for entry in inApp {
            var fields = [
                attribute(1701, integer(1)), attribute(1702, utf8String(entry.productId)), attribute(1703, utf8String(entry.transactionId)),
                attribute(1704, ia5String(entry.purchaseDate)), attribute(1705, utf8String(entry.originalTransactionId)),
                attribute(1706, ia5String(entry.purchaseDate)), attribute(1712, ia5String("")),
            ]
            if let expires = entry.expiresDate { fields.append(attribute(1708, ia5String(expires))) }
            attributes.append(attribute(17, tlv(0x31, fields.flatMap { $0 })))
        }
        return tlv(0x31, (attributes + extra).flatMap { $0 })
    }

    /// Signs `payload` with `pki`'s leaf (or any certificate and key) through openssl cms, carrying
    /// `chain` as the envelope's certificates. `ber` streams it with indefinite lengths, as Xcode does.
    public static func sign(
        _ payload: [UInt8], certificate: Certificate, keyPEM: String, chain: [Certificate], sha1: Bool = false, ber: Bool = false
    ) async throws -> [UInt8] {
        // openssl runs, and is waited for, on a thread of its own, never on the test pool's.
        try await offThePool { try signNow(payload, certificate: certificate, keyPEM: keyPEM, chain: chain, sha1: sha1, ber: ber) }
    }

    private static func signNow(
        _ payload: [UInt8], certificate: Certificate, keyPEM: String, chain: [Certificate], sha1: Bool, ber: Bool
    ) throws -> [UInt8] {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("receipt-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        func write(_ name: String, _ data: Data) throws -> String {
            let url = folder.appendingPathComponent(name)
            try data.write(to: url)
            return url.path
        }
        let content = try write("content", Data(payload))
        let signer = try write("signer.pem", Data((AppStoreTestPKI.pem(certificate) + "\n").utf8))
        let key = try write("signer.key", Data(keyPEM.utf8))
        let output = folder.appendingPathComponent("receipt").path
        var arguments = [
            "cms", "-sign", "-binary", "-nodetach", "-noattr", "-outform", "DER", "-md", sha1 ? "sha1" : "sha256", "-signer", signer,
            "-inkey", key, "-in", content, "-out", output, "-nosmimecap",
        ]
        if !chain.isEmpty {
            arguments += ["-certfile", try write("chain.pem", Data(chain.map { AppStoreTestPKI.pem($0) + "\n" }.joined().utf8))]
        }
        if ber { arguments.append("-stream") }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/openssl")
        process.arguments = arguments
        let errors = Pipe()
        process.standardError = errors
        process.standardOutput = FileHandle.nullDevice
        try process.run()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else {
            throw TestPKIError("openssl cms failed: " + String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self))
        }
        return [UInt8](try Data(contentsOf: URL(fileURLWithPath: output)))
    }

    /// A receipt signed by `pki`'s leaf, carrying its leaf, intermediate and root like Apple's.
    public static func signed(_ payload: [UInt8], by pki: AppStoreTestPKI, sha1: Bool = false, ber: Bool = false) async throws -> [UInt8] {
        try await sign(payload, certificate: pki.leaf, keyPEM: pki.leafKeyPEM, chain: [pki.intermediate, pki.root], sha1: sha1, ber: ber)
    }

    /// `receipt` (DER, as `sign` makes it) with its content in chunks of `size` bytes, a constructed
    /// OCTET STRING as BER allows: the same signed content, in as many BER elements as one likes.
    public static func chunked(_ receipt: [UInt8], size: Int) -> [UInt8] {
        indirect enum Element {
            case primitive(UInt8, [UInt8])
            case constructed(UInt8, [Element])

            var encoded: [UInt8] {
                switch self {
                case .primitive(let tag, let content): TestReceipts.tlv(tag, content)
                case .constructed(let tag, let children): TestReceipts.tlv(tag, children.flatMap(\.encoded))
                }
            }
        }
        func elements(_ bytes: ArraySlice<UInt8>) -> [Element] {
            var result: [Element] = []
            var index = bytes.startIndex
            while index < bytes.endIndex {
                let tag = bytes[index]
                var length = Int(bytes[index + 1])
                index += 2
                if length >= 0x80 {
                    let count = length & 0x7F
                    length = bytes[index..<index + count].reduce(0) { $0 << 8 | Int($1) }
                    index += count
                }
                let content = bytes[index..<index + length]
                result.append(tag & 0x20 != 0 ? .constructed(tag, elements(content)) : .primitive(tag, Array(content)))
                index += length
            }
            return result
        }
        // ContentInfo > [0] > SignedData > encapContentInfo > [0] > OCTET STRING, each the path's child.
        func rewrite(_ element: Element, path: ArraySlice<Int>) -> Element {
            guard case .constructed(let tag, var children) = element else { return element }
            guard let step = path.first else { return element }
            if path.count == 1, case .primitive(0x04, let content) = children[step] {
                let chunks = stride(from: 0, to: content.count, by: size).map {
                    Element.primitive(0x04, Array(content[$0..<min($0 + size, content.count)]))
                }
                children[step] = .constructed(0x24, chunks)
            } else {
                children[step] = rewrite(children[step], path: path.dropFirst())
            }
            return .constructed(tag, children)
        }
        return elements(receipt[...]).map { rewrite($0, path: [1, 0, 2, 1, 0]) }.flatMap(\.encoded)
    }

    // MARK: - DER

    /// One receipt attribute: SEQUENCE { type, version 1, OCTET STRING value }.
    public static func attribute(_ type: Int, _ value: [UInt8]) -> [UInt8] {
        tlv(0x30, integer(type) + integer(1) + tlv(0x04, value))
    }

    /// A DER element: tag, definite length, content.
    public static func tlv(_ tag: UInt8, _ content: [UInt8]) -> [UInt8] {
        var length: [UInt8]
        if content.count < 128 {
            length = [UInt8(content.count)]
        } else {
            var bytes: [UInt8] = []
            var n = content.count
            while n > 0 {
                bytes.insert(UInt8(n & 0xFF), at: 0)
                n >>= 8
            }
            length = [0x80 | UInt8(bytes.count)] + bytes
        }
        return [tag] + length + content
    }

    /// A DER INTEGER (non-negative).
    public static func integer(_ value: Int) -> [UInt8] {
        var bytes: [UInt8] = []
        var n = value
        repeat {
            bytes.insert(UInt8(n & 0xFF), at: 0)
            n >>= 8
        } while n > 0
        if bytes[0] & 0x80 != 0 { bytes.insert(0, at: 0) }
        return tlv(0x02, bytes)
    }

    /// A DER UTF8String.
    public static func utf8String(_ text: String) -> [UInt8] { tlv(0x0C, Array(text.utf8)) }
    /// A DER IA5String, the type of a receipt's dates.
    public static func ia5String(_ text: String) -> [UInt8] { tlv(0x16, Array(text.utf8)) }
}
