import Crypto
import Foundation
import SwiftASN1
import X509
import _CryptoExtras

/// Legacy app receipts: PKCS#7 SignedData as the App Store (DER) and Xcode (BER, indefinite lengths,
/// the content in chunks) write them.
///
/// Accepted when: the envelope is SignedData over `data`; the one signer's certificate is in it, and
/// chains to a trusted receipt root (Apple Inc. Root) through an intermediate with Apple's marker
/// 1.2.840.113635.100.6.2.1, the signer carrying 1.2.840.113635.100.6.11.1, every certificate valid at
/// the receipt's own creation date (field 12); the RSA PKCS#1 v1.5 signature over the content verifies
/// with SHA-1 or SHA-256 (both occur: Apple moved to SHA-256 in 2023); every field and in-app entry
/// has its documented type; then the bundle id, the Apple id in production, the environment, and, when
/// the app sends its device identifier, SHA-1(identifier ‖ opaque value ‖ bundle id) equals field 5.
/// Xcode receipts are accepted only for an app whose settings name the certificate that signed them.
extension SignedDataVerifier {
    /// A receipt larger than this is refused before parsing; the largest real ones (hundreds of
    /// in-app entries) are under 100 KiB.
    public static let maximumReceiptBytes = 1024 * 1024

    /// Verifies a legacy app receipt (raw bytes, or base64 as apps send them) and binds it to the app.
    /// `deviceIdentifier` is the raw identifier (16 bytes of `identifierForVendor` on iOS, the 6-byte
    /// MAC address on macOS); with it, the receipt's device hash must match.
    public func verifyAndDecodeReceipt(_ bytes: [UInt8], deviceIdentifier: [UInt8]? = nil) async throws(PurchaseRefusal) -> AppReceipt {
        guard bytes.count <= Self.maximumReceiptBytes else {
            throw PurchaseRefusal(.malformed, "receipt is \(bytes.count) bytes, over the \(Self.maximumReceiptBytes)-byte limit")
        }
        let envelope = try SignedEnvelope(Self.receiptBytes(bytes))
        let (receipt, rawBundleId) = try ReceiptPayload.decode(envelope.content)
        guard let created = receipt.receiptCreationDate else {
            throw PurchaseRefusal(.malformed, "receipt has no creation date (field 12)")
        }

        // Authenticate: the signer, its chain at the creation date, the signature.
        let signer = envelope.signerCertificate
        let isXcode: Bool
        if let xcode = app.xcodeCertificate, signer == xcode {
            try Self.checkValidity(of: [signer], at: created)
            isXcode = true
        } else {
            _ = try await validateChain(
                leaf: signer, intermediates: envelope.certificates.filter { $0 != signer }, roots: trust.receiptRoots, at: created,
                what: "receipt")
            isXcode = false
        }
        signatureCheckCounter.add(1)
        try envelope.verifySignature()

        // Claims.
        try checkBundle(receipt.bundleId, what: "receipt")
        try checkEnvironment(receipt.environment, signer: isXcode ? .xcode : .appStore, what: "receipt")
        // Field 1 is 0 outside production and in receipts of apps not yet on the store.
        if let appItemId = receipt.appItemId, appItemId != 0 {
            try checkAppAppleId(appItemId, environment: receipt.environment, what: "receipt")
        }
        if let deviceIdentifier {
            var hash = Insecure.SHA1()
            hash.update(data: deviceIdentifier)
            hash.update(data: receipt.opaqueValue)
            hash.update(data: rawBundleId)
            guard Array(hash.finalize()) == receipt.sha1Hash else {
                throw PurchaseRefusal(.notAuthenticated, "receipt's device hash does not match this device identifier")
            }
        }
        return receipt
    }

    /// The receipt's bytes: as given, or decoded when they are base64 text (what apps send).
    static func receiptBytes(_ bytes: [UInt8]) -> [UInt8] {
        // A DER or BER SEQUENCE starts with 0x30, which base64 text never does.
        guard bytes.first != 0x30,
            let text = String(bytes: bytes, encoding: .ascii)?.trimmingCharacters(in: .whitespacesAndNewlines),
            let decoded = Data(base64Encoded: text, options: .ignoreUnknownCharacters), !decoded.isEmpty
        else { return bytes }
        return [UInt8](decoded)
    }
}

/// The PKCS#7 SignedData envelope (RFC 2315, RFC 5652) of a receipt, read with BER rules.
struct SignedEnvelope {
    static let signedDataOID: ASN1ObjectIdentifier = [1, 2, 840, 113549, 1, 7, 2]
    static let dataOID: ASN1ObjectIdentifier = [1, 2, 840, 113549, 1, 7, 1]
    static let sha1OID: ASN1ObjectIdentifier = [1, 3, 14, 3, 2, 26]
    static let sha256OID: ASN1ObjectIdentifier = [2, 16, 840, 1, 101, 3, 4, 2, 1]
    static let rsaEncryptionOID: ASN1ObjectIdentifier = [1, 2, 840, 113549, 1, 1, 1]
    static let sha1WithRSAOID: ASN1ObjectIdentifier = [1, 2, 840, 113549, 1, 1, 5]
    static let sha256WithRSAOID: ASN1ObjectIdentifier = [1, 2, 840, 113549, 1, 1, 11]

    var content: [UInt8]
    var certificates: [Certificate]
    var signerCertificate: Certificate
    var digestAlgorithm: ASN1ObjectIdentifier
    var signatureAlgorithm: ASN1ObjectIdentifier
    var signature: [UInt8]

    init(_ bytes: [UInt8]) throws(PurchaseRefusal) {
        do {
            let parsed = try Self.parse(bytes)
            self = parsed
        } catch let refusal as PurchaseRefusal {
            throw refusal
        } catch {
            throw PurchaseRefusal(.malformed, "not a PKCS#7 receipt: \(error)")
        }
    }

    private init(
        content: [UInt8], certificates: [Certificate], signerCertificate: Certificate, digestAlgorithm: ASN1ObjectIdentifier,
        signatureAlgorithm: ASN1ObjectIdentifier, signature: [UInt8]
    ) {
        self.content = content
        self.certificates = certificates
        self.signerCertificate = signerCertificate
        self.digestAlgorithm = digestAlgorithm
        self.signatureAlgorithm = signatureAlgorithm
        self.signature = signature
    }

    private static func parse(_ bytes: [UInt8]) throws -> SignedEnvelope {
        let root = try BER.parse(bytes)
        return try BER.sequence(root, identifier: .sequence) { nodes in
            let contentType = try ASN1ObjectIdentifier(berEncoded: &nodes)
            guard contentType == signedDataOID else {
                throw PurchaseRefusal(.malformed, "PKCS#7 content is \(contentType), not SignedData")
            }
            return try BER.explicitlyTagged(&nodes, tagNumber: 0, tagClass: .contextSpecific) { node in
                try BER.sequence(node, identifier: .sequence) { nodes in try signedData(&nodes) }
            }
        }
    }

    private static func signedData(_ nodes: inout ASN1NodeCollection.Iterator) throws -> SignedEnvelope {
        _ = try Int(berEncoded: &nodes)  // version
        guard let digestSet = nodes.next(), digestSet.identifier == .set else {
            throw PurchaseRefusal(.malformed, "SignedData has no digestAlgorithms")
        }
        // encapContentInfo: data, with the content in [0] EXPLICIT OCTET STRING (constructed in BER).
        guard let encapsulated = nodes.next() else { throw PurchaseRefusal(.malformed, "SignedData has no content") }
        let content: [UInt8] = try BER.sequence(encapsulated, identifier: .sequence) { nodes in
            let type = try ASN1ObjectIdentifier(berEncoded: &nodes)
            guard type == dataOID else { throw PurchaseRefusal(.malformed, "signed content is \(type), not data") }
            return try BER.explicitlyTagged(&nodes, tagNumber: 0, tagClass: .contextSpecific) { node in
                Array(try ASN1OctetString(berEncoded: node).bytes)
            }
        }
        var certificates: [Certificate] = []
        var next = nodes.next()
        if let node = next, node.identifier == ASN1Identifier(tagWithNumber: 0, tagClass: .contextSpecific) {
            guard case .constructed(let children) = node.content else {
                throw PurchaseRefusal(.malformed, "SignedData certificates are not a set")
            }
            for child in children {
                certificates.append(try Certificate(derEncoded: Array(child.encodedBytes)))
            }
            next = nodes.next()
        }
        if let node = next, node.identifier == ASN1Identifier(tagWithNumber: 1, tagClass: .contextSpecific) {
            next = nodes.next()  // CRLs: Apple sends none, and offline verification reads none.
        }
        guard let signerInfos = next, signerInfos.identifier == .set, case .constructed(let signers) = signerInfos.content else {
            throw PurchaseRefusal(.malformed, "SignedData has no signerInfos")
        }
        var iterator = signers.makeIterator()
        guard let signerNode = iterator.next(), iterator.next() == nil else {
            throw PurchaseRefusal(.malformed, "receipt must have exactly one signer")
        }
        return try BER.sequence(signerNode, identifier: .sequence) { nodes in
            _ = try Int(berEncoded: &nodes)  // version
            guard let sid = nodes.next() else { throw PurchaseRefusal(.malformed, "signer has no identifier") }
            let (issuer, serial): (DistinguishedName, Certificate.SerialNumber) = try BER.sequence(sid, identifier: .sequence) {
                nodes in
                guard let issuerNode = nodes.next() else { throw PurchaseRefusal(.malformed, "signer has no issuer") }
                let issuer = try DistinguishedName(derEncoded: issuerNode)
                let serial = try ArraySlice<UInt8>(berEncoded: &nodes)
                return (issuer, Certificate.SerialNumber(bytes: serial))
            }
            let digest = try Self.algorithm(&nodes)
            var node = nodes.next()
            if let attributes = node, attributes.identifier == ASN1Identifier(tagWithNumber: 0, tagClass: .contextSpecific) {
                // Apple's receipts sign the content itself; signed attributes would change what is signed.
                _ = attributes
                throw PurchaseRefusal(.notAuthenticated, "receipt signer has signed attributes, which the App Store never writes")
            }
            guard let algorithmNode = node else { throw PurchaseRefusal(.malformed, "signer has no signature algorithm") }
            let signatureAlgorithm = try Self.algorithm(algorithmNode)
            node = nodes.next()
            guard let signatureNode = node else { throw PurchaseRefusal(.malformed, "signer has no signature") }
            let signature = Array(try ASN1OctetString(berEncoded: signatureNode).bytes)
            guard let signer = certificates.first(where: { $0.issuer == issuer && $0.serialNumber == serial }) else {
                throw PurchaseRefusal(.notAuthenticated, "the receipt does not carry its signer's certificate")
            }
            return SignedEnvelope(
                content: content, certificates: certificates, signerCertificate: signer, digestAlgorithm: digest,
                signatureAlgorithm: signatureAlgorithm, signature: signature)
        }
    }

    private static func algorithm(_ nodes: inout ASN1NodeCollection.Iterator) throws -> ASN1ObjectIdentifier {
        guard let node = nodes.next() else { throw PurchaseRefusal(.malformed, "signer has no digest algorithm") }
        return try algorithm(node)
    }

    /// An AlgorithmIdentifier's OID; its parameters (NULL or absent) carry nothing for SHA and RSA.
    private static func algorithm(_ node: ASN1Node) throws -> ASN1ObjectIdentifier {
        try BER.sequence(node, identifier: .sequence) { nodes in
            let oid = try ASN1ObjectIdentifier(berEncoded: &nodes)
            while nodes.next() != nil {}
            return oid
        }
    }

    /// RSA PKCS#1 v1.5 over the content's SHA-1 or SHA-256, with the signer's key.
    func verifySignature() throws(PurchaseRefusal) {
        guard let key = _RSA.Signing.PublicKey(signerCertificate.publicKey) else {
            throw PurchaseRefusal(.notAuthenticated, "receipt signer's key is not RSA")
        }
        let sha1Signature = [Self.rsaEncryptionOID, Self.sha1WithRSAOID].contains(signatureAlgorithm)
        let sha256Signature = [Self.rsaEncryptionOID, Self.sha256WithRSAOID].contains(signatureAlgorithm)
        let signature = _RSA.Signing.RSASignature(rawRepresentation: signature)
        let valid: Bool
        if digestAlgorithm == Self.sha1OID, sha1Signature {
            valid = key.isValidSignature(signature, for: Insecure.SHA1.hash(data: content), padding: .insecurePKCS1v1_5)
        } else if digestAlgorithm == Self.sha256OID, sha256Signature {
            valid = key.isValidSignature(signature, for: SHA256.hash(data: content), padding: .insecurePKCS1v1_5)
        } else {
            throw PurchaseRefusal(
                .notAuthenticated, "receipt digest \(digestAlgorithm) with signature \(signatureAlgorithm) is not SHA-1 or SHA-256 with RSA"
            )
        }
        guard valid else {
            throw PurchaseRefusal(.notAuthenticated, "receipt signature does not verify with its signer's key")
        }
    }
}

/// The receipt's payload: a SET of (type, version, value) attributes, each value the DER of a typed value.
enum ReceiptPayload {
    /// The receipt and the raw bytes of field 2 (what the device hash covers).
    static func decode(_ bytes: [UInt8]) throws(PurchaseRefusal) -> (AppReceipt, [UInt8]) {
        var receipt = AppReceipt(opaqueValue: [], sha1Hash: [], inApp: [])
        var rawBundleId: [UInt8] = []
        do {
            for (type, value) in try attributes(bytes) {
                switch type {
                case 0: receipt.receiptType = try utf8(value, field: type)
                case 1: receipt.appItemId = try integer(value, field: type)
                case 2:
                    receipt.bundleId = try utf8(value, field: type)
                    rawBundleId = value
                case 3: receipt.applicationVersion = try utf8(value, field: type)
                case 4: receipt.opaqueValue = value
                case 5: receipt.sha1Hash = value
                case 12: receipt.receiptCreationDate = try date(value, field: type)
                case 17: receipt.inApp.append(try inAppPurchase(value))
                case 19: receipt.originalApplicationVersion = try utf8(value, field: type)
                case 21: receipt.expirationDate = try date(value, field: type)
                default: break  // undocumented fields are Apple's business
                }
            }
        } catch let refusal as PurchaseRefusal {
            throw refusal
        } catch {
            throw PurchaseRefusal(.malformed, "receipt content is not Apple's attribute set: \(error)")
        }
        return (receipt, rawBundleId)
    }

    static func inAppPurchase(_ bytes: [UInt8]) throws -> AppReceipt.InAppPurchase {
        var entry = AppReceipt.InAppPurchase()
        for (type, value) in try attributes(bytes) {
            switch type {
            case 1701: entry.quantity = try integer(value, field: type)
            case 1702: entry.productId = try utf8(value, field: type)
            case 1703: entry.transactionId = try utf8(value, field: type)
            case 1704: entry.purchaseDate = try date(value, field: type)
            case 1705: entry.originalTransactionId = try utf8(value, field: type)
            case 1706: entry.originalPurchaseDate = try date(value, field: type)
            case 1708: entry.subscriptionExpirationDate = try date(value, field: type)
            case 1711: entry.webOrderLineItemId = try integer(value, field: type)
            case 1712: entry.cancellationDate = try date(value, field: type)
            case 1713: entry.isTrialPeriod = try integer(value, field: type).map { $0 != 0 }
            case 1719: entry.isInIntroOfferPeriod = try integer(value, field: type).map { $0 != 0 }
            case 1721: entry.promotionalOfferIdentifier = try utf8(value, field: type)
            default: break
            }
        }
        return entry
    }

    /// The (type, value) pairs of an attribute SET.
    static func attributes(_ bytes: [UInt8]) throws -> [(Int, [UInt8])] {
        let root = try BER.parse(bytes)
        guard root.identifier == .set, case .constructed(let children) = root.content else {
            throw PurchaseRefusal(.malformed, "receipt content is not an ASN.1 SET")
        }
        var pairs: [(Int, [UInt8])] = []
        for child in children {
            let pair: (Int, [UInt8]) = try BER.sequence(child, identifier: .sequence) { nodes in
                let type = try Int(berEncoded: &nodes)
                _ = try Int(berEncoded: &nodes)  // version
                let value = try ASN1OctetString(berEncoded: &nodes)
                return (type, Array(value.bytes))
            }
            pairs.append(pair)
        }
        return pairs
    }

    static func utf8(_ value: [UInt8], field: Int) throws -> String? {
        guard !value.isEmpty else { return nil }
        let node = try BER.parse(value)
        switch node.identifier {
        case .utf8String: return String(try ASN1UTF8String(berEncoded: node))
        case .ia5String: return String(try ASN1IA5String(berEncoded: node))
        case .printableString: return String(try ASN1PrintableString(berEncoded: node))
        default: throw PurchaseRefusal(.malformed, "receipt field \(field) is not a string")
        }
    }

    static func integer(_ value: [UInt8], field: Int) throws -> Int64? {
        guard !value.isEmpty else { return nil }
        let node = try BER.parse(value)
        guard node.identifier == .integer else { throw PurchaseRefusal(.malformed, "receipt field \(field) is not an INTEGER") }
        return try Int64(berEncoded: node)
    }

    /// RFC 3339 as receipts write it: "2015-08-13T07:50:46Z", Xcode's "…+0300", sometimes with
    /// fractional seconds; an empty string means absent.
    static func date(_ value: [UInt8], field: Int) throws -> Date? {
        guard let text = try utf8(value, field: field), !text.isEmpty else { return nil }
        guard let date = parseDate(text) else {
            throw PurchaseRefusal(.malformed, "receipt field \(field) is not a date: \(PurchaseRefusal.excerpt(text))")
        }
        return date
    }

    static func parseDate(_ text: String) -> Date? {
        for format in [
            "yyyy-MM-dd'T'HH:mm:ssXXXXX", "yyyy-MM-dd'T'HH:mm:ss.SSSXXXXX", "yyyy-MM-dd'T'HH:mm:ssXXXX", "yyyy-MM-dd'T'HH:mm:ss.SSSXXXX",
        ] {
            let formatter = DateFormatter()
            formatter.locale = Locale(identifier: "en_US_POSIX")
            formatter.timeZone = TimeZone(identifier: "UTC")
            formatter.dateFormat = format
            if let date = formatter.date(from: text) { return date }
        }
        return nil
    }
}
