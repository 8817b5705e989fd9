import Crypto
import Foundation
import Ledger
import SwiftASN1
import X509
import _CryptoExtras

/// Legacy app receipts: PKCS#7 SignedData as the App Store (DER) and Xcode (BER, indefinite lengths,
/// the content in chunks) write them.
///
/// Accepted when: the envelope is SignedData over `data`; it carries at most three certificates
/// (Apple's carry signer, intermediate and root, Xcode's the signer alone); the one signer's
/// certificate is in it, and chains to a trusted receipt root (Apple Inc. Root) through the one
/// certificate that can be its intermediate (its subject is the signer's issuer, and it carries Apple's
/// marker 1.2.840.113635.100.6.2.1), the signer carrying 1.2.840.113635.100.6.11.1, every certificate
/// valid at the receipt's own creation date (field 12); the RSA PKCS#1 v1.5 signature over the
/// content verifies with SHA-1 or SHA-256 (both occur: Apple moved to SHA-256 in 2023); every field and
/// in-app entry has its documented type, with at most 10,000 attributes to a SET and 5,000 in-app
/// entries; then the bundle id, the Apple id in production, the environment, and, when the app sends
/// its device identifier, SHA-1(identifier ‖ opaque value ‖ bundle id) equals field 5. Xcode receipts
/// are accepted only for an app whose settings name the certificate that signed them.
///
/// Anyone can send a receipt, so a refused one must cost little (issue 35): the certificates are
/// counted before one is parsed, the chain builder is handed one intermediate, and before the signature
/// verifies the content is only outlined, its attributes' types read to find field 12 and no value
/// decoded.
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
        // Before authentication, what it needs and no more: the outline, and field 12 for the date.
        let attributes = try ReceiptPayload.attributes(envelope.content, of: "receipt content")
        guard let created = try ReceiptPayload.creationDate(in: attributes) else {
            throw PurchaseRefusal(.malformed, "receipt has no creation date (field 12)")
        }

        // Authenticate: the signer, its chain at the creation date, the signature.
        let signer = envelope.signerCertificate
        let isXcode: Bool
        if let xcode = app.xcodeCertificate, signer == xcode {
            try Self.checkValidity(of: [signer], at: created)
            isXcode = true
        } else if signer.issuer == signer.subject {
            throw PurchaseRefusal(
                .notAuthenticated,
                app.xcodeCertificate == nil
                    ? "receipt's signer is self-signed, as Xcode's StoreKit testing signs; accepted only for an app whose settings name that certificate"
                    : "receipt's self-signed signer is not the Xcode certificate the app's settings name")
        } else {
            _ = try await validateChain(
                leaf: signer, intermediate: try envelope.intermediate(), roots: trust.receiptRoots, at: created, what: "receipt")
            isXcode = false
        }
        signatureCheckCounter.add(1)
        try envelope.verifySignature()

        // Authenticated: now the rest of the content.
        let (receipt, rawBundleId) = try ReceiptPayload.decode(attributes, createdAt: created)
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
    /// The most certificates a receipt may carry: the App Store's carry three (signer, intermediate,
    /// root; every one of the real corpus's 15), Xcode's one.
    static let maximumCertificates = 3
    /// The most BER elements an envelope may hold, counted before SwiftASN1 parses it, since it makes
    /// a node of each first. Apple's hold under 300 (three certificates' worth: the content is one
    /// OCTET STRING); Xcode's cut their content into chunks of hundreds of bytes. A forged envelope
    /// of tiny elements (its content in 1-byte chunks, 128 Ki of them in the endpoint's 512 KiB)
    /// cost a hundred times a genuine receipt's verification before this bound.
    static let maximumElements = 4_096

    /// The signed content: a slice of the receipt's bytes (a copy when BER cut it into chunks).
    var content: ArraySlice<UInt8>
    var certificates: [Certificate]
    var signerCertificate: Certificate
    var digestAlgorithm: ASN1ObjectIdentifier
    var signatureAlgorithm: ASN1ObjectIdentifier
    var signature: [UInt8]

    init(_ bytes: [UInt8]) throws(PurchaseRefusal) {
        guard !Self.holdsMoreElements(than: Self.maximumElements, bytes) else {
            throw PurchaseRefusal(
                .malformed, "receipt envelope holds more than \(Self.maximumElements) BER elements; Apple's hold a few hundred")
        }
        do {
            let parsed = try Self.parse(bytes)
            self = parsed
        } catch let refusal as PurchaseRefusal {
            throw refusal
        } catch let error as ASN1Error {
            throw PurchaseRefusal(.malformed, "not a PKCS#7 receipt: \(Self.plain(error))")
        } catch {
            throw PurchaseRefusal(.malformed, "not a PKCS#7 receipt")
        }
    }

    private init(
        content: ArraySlice<UInt8>, certificates: [Certificate], signerCertificate: Certificate, digestAlgorithm: ASN1ObjectIdentifier,
        signatureAlgorithm: ASN1ObjectIdentifier, signature: [UInt8]
    ) {
        self.content = content
        self.certificates = certificates
        self.signerCertificate = signerCertificate
        self.digestAlgorithm = digestAlgorithm
        self.signatureAlgorithm = signatureAlgorithm
        self.signature = signature
    }

    /// Whether `bytes` hold more than `limit` BER elements, read from their headers alone and no
    /// further than the first past the limit. What it cannot read it leaves to the parser, which
    /// refuses it.
    static func holdsMoreElements(than limit: Int, _ bytes: [UInt8]) -> Bool {
        var count = 0
        var index = 0
        // Where each constructed element being read ends: an index, or nil for an indefinite length.
        var ends: [Int?] = []
        while index < bytes.count {
            if let end = ends.last {
                if let end, index >= end {
                    ends.removeLast()
                    continue
                }
                if end == nil, bytes[index] == 0, index + 1 < bytes.count, bytes[index + 1] == 0 {
                    index += 2  // end-of-contents
                    ends.removeLast()
                    continue
                }
            }
            let tag = bytes[index]
            index += 1
            if tag & 0x1F == 0x1F {  // a tag number in further bytes
                while index < bytes.count, bytes[index] & 0x80 != 0 { index += 1 }
                index += 1
            }
            guard index < bytes.count else { return false }
            let first = bytes[index]
            index += 1
            count += 1
            guard count <= limit else { return true }
            if first == 0x80 {
                guard tag & 0x20 != 0 else { return false }
                ends.append(nil)
                continue
            }
            var length = Int(first)
            if first > 0x80 {
                let size = Int(first & 0x7F)
                guard size <= 4, bytes.count - index >= size else { return false }
                length = 0
                for _ in 0..<size {
                    length = length << 8 | Int(bytes[index])
                    index += 1
                }
            }
            guard bytes.count - index >= length else { return false }
            if tag & 0x20 != 0 {
                ends.append(index + length)
            } else {
                index += length
            }
        }
        return false
    }

    /// What went wrong, in words: SwiftASN1's own description names its source file and line.
    private static func plain(_ error: ASN1Error) -> String {
        switch error.code {
        case .truncatedASN1Field: "truncated BER"
        case .unexpectedFieldType: "an element of an unexpected type"
        case .invalidASN1IntegerEncoding: "a badly encoded INTEGER"
        case .unsupportedFieldLength: "a length too large to read"
        case .invalidStringRepresentation: "a badly encoded string"
        default: "invalid BER"
        }
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
        let content: ArraySlice<UInt8> = try BER.sequence(encapsulated, identifier: .sequence) { nodes in
            let type = try ASN1ObjectIdentifier(berEncoded: &nodes)
            guard type == dataOID else { throw PurchaseRefusal(.malformed, "signed content is \(type), not data") }
            return try BER.explicitlyTagged(&nodes, tagNumber: 0, tagClass: .contextSpecific) { node in
                try ASN1OctetString(berEncoded: node).bytes
            }
        }
        var certificates: [Certificate] = []
        var next = nodes.next()
        if let node = next, node.identifier == ASN1Identifier(tagWithNumber: 0, tagClass: .contextSpecific) {
            guard case .constructed(let children) = node.content else {
                throw PurchaseRefusal(.malformed, "SignedData certificates are not a set")
            }
            // Counted before any is parsed: certificates an envelope carries are what a forged one
            // multiplies work with.
            let count = children.reduce(0) { count, _ in count + 1 }
            guard count <= maximumCertificates else {
                throw PurchaseRefusal(
                    .notAuthenticated,
                    "receipt carries \(count) certificates; the App Store's carry 3 (signer, intermediate, root), Xcode's 1")
            }
            for (index, child) in children.enumerated() {
                do {
                    certificates.append(try Certificate(derEncoded: Array(child.encodedBytes)))
                } catch {
                    throw PurchaseRefusal(.malformed, "receipt certificate \(index + 1) is not DER X.509")
                }
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

    /// The one certificate that can be the signer's intermediate at Apple: its subject is the name
    /// the signer gives as its issuer, and it carries Apple's marker. Apple's receipts carry exactly one;
    /// none, or several (which would leave the chain builder to try each), is refused.
    func intermediate() throws(PurchaseRefusal) -> Certificate {
        let named = certificates.filter { $0 != signerCertificate && $0.subject == signerCertificate.issuer }
        let marked = named.filter { SignedDataVerifier.carries($0, SignedDataVerifier.intermediateMarkerOID) }
        guard marked.count <= 1 else {
            throw PurchaseRefusal(
                .notAuthenticated, "receipt carries \(marked.count) certificates that could be its signer's intermediate; Apple's carry one"
            )
        }
        if let intermediate = marked.first { return intermediate }
        guard named.isEmpty else {
            throw PurchaseRefusal(.notAuthenticated, "receipt intermediate lacks Apple's marker 1.2.840.113635.100.6.2.1")
        }
        throw PurchaseRefusal(.notAuthenticated, "receipt does not carry the certificate that issued its signer")
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

/// The receipt's payload: a SET of (type, version, value) attributes, each value the DER of a typed
/// value, in-app entries (field 17) a SET of their own.
///
/// Read by hand (`DERReader`) rather than through SwiftASN1's parser, which builds a node for every
/// element of the content before the first is looked at: the outline of a forged 380 KiB content then
/// cost more than verifying a genuine receipt. Here the outline is the attributes' types and their
/// values' places, no value decoded; values are decoded only once the receipt is authenticated.
enum ReceiptPayload {
    /// The most attributes a SET (the receipt's, or an in-app entry's) may have. A real receipt with
    /// 187 in-app entries has about 200 at the top, and an entry about 15.
    static let maximumAttributes = 10_000
    /// The most in-app entries a receipt may have: real ones have up to a few hundred.
    static let maximumInAppEntries = 5_000

    /// One attribute: its type and its value's DER, undecoded.
    struct Attribute {
        var type: Int
        var value: ArraySlice<UInt8>
    }

    /// The attributes of the SET `bytes` holds (`what` names it in a refusal), in order.
    static func attributes(_ bytes: ArraySlice<UInt8>, of what: String) throws(PurchaseRefusal) -> [Attribute] {
        let outline = bytes.withUnsafeBufferPointer { buffer in
            Result { () throws(PurchaseRefusal) in try Self.outline(buffer, of: what) }
        }
        let base = bytes.startIndex
        return try outline.get().map { Attribute(type: $0.type, value: bytes[(base + $0.value.lowerBound)..<(base + $0.value.upperBound)]) }
    }

    /// The attributes' types and where their values lie, read over the raw buffer: for a forged
    /// content of thousands of attributes, retaining a slice at every step was a third of its cost.
    private static func outline(_ buffer: UnsafeBufferPointer<UInt8>, of what: String) throws(PurchaseRefusal) -> [(
        type: Int, value: Range<Int>
    )] {
        var outer = DERReader(buffer, 0..<buffer.count)
        guard let set = try outer.next(in: what), set.tag == 0x31, outer.isEmpty else {
            throw PurchaseRefusal(.malformed, "\(what) is not one ASN.1 SET")
        }
        var elements = DERReader(buffer, set.content)
        var attributes: [(type: Int, value: Range<Int>)] = []
        while let element = try elements.next(in: what) {
            guard attributes.count < maximumAttributes else {
                throw PurchaseRefusal(.malformed, "\(what) has more than \(maximumAttributes) attributes")
            }
            var fields = DERReader(buffer, element.content)
            guard element.tag == 0x30, let type = try fields.next(in: what), type.tag == 0x02,
                let typeNumber = integer(buffer[type.content]), let version = try fields.next(in: what), version.tag == 0x02,
                let value = try fields.next(in: what), value.tag == 0x04, fields.isEmpty
            else {
                throw PurchaseRefusal(.malformed, "\(what) holds an attribute that is not SEQUENCE { type, version, value }")
            }
            attributes.append((Int(typeNumber), value.content))
        }
        return attributes
    }

    /// Field 12, when the receipt was made: the date its chain is checked at, so the one field read
    /// before the receipt is authenticated.
    static func creationDate(in attributes: [Attribute]) throws(PurchaseRefusal) -> Date? {
        let fields = attributes.filter { $0.type == 12 }
        guard fields.count <= 1 else {
            throw PurchaseRefusal(.malformed, "receipt has \(fields.count) creation dates (field 12)")
        }
        guard let field = fields.first else { return nil }
        return try date(field.value, field: 12)
    }

    /// The receipt and the raw bytes of field 2 (what the device hash covers), from its attributes
    /// and its creation date as `creationDate(in:)` read it.
    static func decode(_ attributes: [Attribute], createdAt created: Date?) throws(PurchaseRefusal) -> (AppReceipt, [UInt8]) {
        let entries = attributes.lazy.filter { $0.type == 17 }.count
        guard entries <= maximumInAppEntries else {
            throw PurchaseRefusal(.malformed, "receipt has \(entries) in-app entries, more than the \(maximumInAppEntries) allowed")
        }
        var receipt = AppReceipt(opaqueValue: [], sha1Hash: [], inApp: [])
        receipt.receiptCreationDate = created
        receipt.inApp.reserveCapacity(entries)
        var rawBundleId: [UInt8] = []
        for attribute in attributes {
            let (type, value) = (attribute.type, attribute.value)
            switch type {
            case 0: receipt.receiptType = try utf8(value, field: type)
            case 1: receipt.appItemId = try integer(value, field: type)
            case 2:
                receipt.bundleId = try utf8(value, field: type)
                rawBundleId = Array(value)
            case 3: receipt.applicationVersion = try utf8(value, field: type)
            case 4: receipt.opaqueValue = Array(value)
            case 5: receipt.sha1Hash = Array(value)
            case 17: receipt.inApp.append(try inAppPurchase(value))
            case 19: receipt.originalApplicationVersion = try utf8(value, field: type)
            case 21: receipt.expirationDate = try date(value, field: type)
            default: break  // field 12 is read apart; undocumented fields are Apple's business
            }
        }
        return (receipt, rawBundleId)
    }

    /// What a receipt's envelope and content say, nothing checked: for display beside a refusal only.
    static func unverified(_ bytes: [UInt8]) throws(PurchaseRefusal) -> AppReceipt {
        let envelope = try SignedEnvelope(SignedDataVerifier.receiptBytes(bytes))
        let attributes = try attributes(envelope.content, of: "receipt content")
        return try decode(attributes, createdAt: try creationDate(in: attributes)).0
    }

    static func inAppPurchase(_ bytes: ArraySlice<UInt8>) throws(PurchaseRefusal) -> AppReceipt.InAppPurchase {
        var entry = AppReceipt.InAppPurchase()
        for attribute in try attributes(bytes, of: "an in-app entry") {
            let (type, value) = (attribute.type, attribute.value)
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

    /// A field's value: exactly one DER element, its tag and content.
    static func element(_ value: ArraySlice<UInt8>, field: Int) throws(PurchaseRefusal) -> (tag: UInt8, content: ArraySlice<UInt8>) {
        let what = "receipt field \(field)"
        let read = value.withUnsafeBufferPointer { buffer in
            Result { () throws(PurchaseRefusal) -> DERReader.Element in
                var reader = DERReader(buffer, 0..<buffer.count)
                guard let element = try reader.next(in: what), reader.isEmpty else {
                    throw PurchaseRefusal(.malformed, "\(what) is not one DER value")
                }
                return element
            }
        }
        let element = try read.get()
        let base = value.startIndex
        return (element.tag, value[(base + element.content.lowerBound)..<(base + element.content.upperBound)])
    }

    /// A UTF8String, IA5String or PrintableString; an empty value is absent.
    static func utf8(_ value: ArraySlice<UInt8>, field: Int) throws(PurchaseRefusal) -> String? {
        guard let bytes = try stringBytes(value, field: field) else { return nil }
        guard let text = String(bytes: bytes, encoding: .utf8) else {
            throw PurchaseRefusal(.malformed, "receipt field \(field) is not UTF-8")
        }
        return text
    }

    /// The bytes of a UTF8String, IA5String or PrintableString, checked for their type's characters
    /// (UTF-8 itself is checked where a string is made of them); nil for an empty value.
    static func stringBytes(_ value: ArraySlice<UInt8>, field: Int) throws(PurchaseRefusal) -> ArraySlice<UInt8>? {
        guard !value.isEmpty else { return nil }
        let element = try element(value, field: field)
        let valid: Bool
        switch element.tag {
        case 0x0C: valid = true  // UTF8String
        case 0x16: valid = element.content.allSatisfy { $0 < 0x80 }  // IA5String: ASCII
        case 0x13: valid = element.content.allSatisfy(isPrintable)
        default: throw PurchaseRefusal(.malformed, "receipt field \(field) is not a string")
        }
        guard valid else {
            throw PurchaseRefusal(.malformed, "receipt field \(field) holds characters its string type does not allow")
        }
        return element.content
    }

    /// PrintableString's characters (X.680 §41.4).
    private static func isPrintable(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "0")...UInt8(ascii: "9"): true
        default: Array(" '()+,-./:=?".utf8).contains(byte)
        }
    }

    /// An INTEGER of at most 64 bits; an empty value is absent.
    static func integer(_ value: ArraySlice<UInt8>, field: Int) throws(PurchaseRefusal) -> Int64? {
        guard !value.isEmpty else { return nil }
        let element = try element(value, field: field)
        guard element.tag == 0x02, let number = integer(element.content) else {
            throw PurchaseRefusal(.malformed, "receipt field \(field) is not an INTEGER of at most 64 bits")
        }
        return number
    }

    /// An INTEGER's content, two's complement in 1 to 8 bytes.
    static func integer<Bytes: Collection<UInt8>>(_ content: Bytes) -> Int64? {
        guard let first = content.first, content.count <= 8 else { return nil }
        var number: Int64 = first >= 0x80 ? -1 : 0
        for byte in content { number = number << 8 | Int64(byte) }
        return number
    }

    /// RFC 3339 as receipts write it (`RFC3339.parse`), read from the bytes; an empty string means absent.
    static func date(_ value: ArraySlice<UInt8>, field: Int) throws(PurchaseRefusal) -> Date? {
        guard let bytes = try stringBytes(value, field: field), !bytes.isEmpty else { return nil }
        guard let date = RFC3339.parse(bytes) else {
            let text = String(decoding: bytes, as: UTF8.self)
            throw PurchaseRefusal(.malformed, "receipt field \(field) is not a date: \(PurchaseRefusal.excerpt(text))")
        }
        return date
    }
}

/// DER elements read one after another from a buffer: each one's tag and where its content lies,
/// nothing decoded, copied or retained. Definite lengths only, as DER has them (Apple's receipts and
/// Xcode's write their content in DER, whatever their envelope), and one-byte tags, which is all a
/// receipt's content uses.
struct DERReader {
    /// One element: its identifier octet and its content's place in the buffer.
    struct Element {
        var tag: UInt8
        var content: Range<Int>
    }

    private let buffer: UnsafeBufferPointer<UInt8>
    private var index: Int
    private let end: Int

    /// Reads the elements that lie in `range` of `buffer`.
    init(_ buffer: UnsafeBufferPointer<UInt8>, _ range: Range<Int>) {
        self.buffer = buffer
        self.index = range.lowerBound
        self.end = range.upperBound
    }

    var isEmpty: Bool { index == end }

    /// The next element, nil at the end; `what` names the bytes in a refusal.
    mutating func next(in what: String) throws(PurchaseRefusal) -> Element? {
        guard index < end else { return nil }
        let tag = buffer[index]
        guard tag & 0x1F != 0x1F else { throw Self.refusal(what, "a tag of more than one byte") }
        guard end - index >= 2 else { throw Self.refusal(what, "truncated DER") }
        let first = buffer[index + 1]
        var start = index + 2
        var length = Int(first)
        if first >= 0x80 {
            let count = Int(first & 0x7F)
            guard count > 0 else { throw Self.refusal(what, "an indefinite length, which DER has none of") }
            guard count <= 4 else { throw Self.refusal(what, "a length of more than 4 bytes") }
            guard end - start >= count else { throw Self.refusal(what, "truncated DER") }
            length = 0
            for offset in 0..<count { length = length << 8 | Int(buffer[start + offset]) }
            start += count
        }
        guard end - start >= length else { throw Self.refusal(what, "truncated DER") }
        index = start + length
        return Element(tag: tag, content: start..<index)
    }

    private static func refusal(_ what: String, _ problem: String) -> PurchaseRefusal {
        PurchaseRefusal(.malformed, "\(what) is not DER: \(problem)")
    }
}
