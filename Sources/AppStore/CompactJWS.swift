import FeedSigning
import Foundation
import Ledger

/// A compact JWS split into its parts, nothing in it believed yet.
struct CompactJWS {
    /// A JWS longer than this is refused before parsing: Apple's are 3 to 6 KiB (three base64
    /// certificates dominate), a notification with its two nested tokens about 14 KiB.
    static let maximumBytes = 64 * 1024

    /// The header fields read; others are ignored, a known one of the wrong type is malformed.
    struct Header: Decodable {
        var alg: String?
        var x5c: [String]?
        var crit: [String]?
    }

    var header: Header
    var payload: [UInt8]
    var signature: [UInt8]
    /// `header.payload` as sent: what the signature covers (RFC 7515 §5.2).
    var signingInput: ArraySlice<UInt8>

    /// Splits `text`; with `headers`, a header already decoded from the same bytes is taken from it.
    init(_ text: String, headers: JWSHeaderCache? = nil) throws(PurchaseRefusal) {
        let bytes = Array(text.utf8)
        guard bytes.count <= Self.maximumBytes else {
            throw PurchaseRefusal(.malformed, "JWS is \(bytes.count) bytes, over the \(Self.maximumBytes)-byte limit")
        }
        // The two dots, found by `memchr`: this runs on 20 KiB a notification, and `firstIndex(of:)`
        // stepped through them a byte at a time (1.5% of a stored notification's CPU, `perf`).
        let dot = UInt8(ascii: ".")
        let dots = bytes.withUnsafeBufferPointer { bytes -> (Int, Int)? in
            guard let base = bytes.baseAddress else { return nil }
            func nextDot(from start: Int) -> Int? {
                memchr(base + start, Int32(dot), bytes.count - start).map { UnsafeRawPointer($0) - UnsafeRawPointer(base) }
            }
            guard let first = nextDot(from: 0), let second = nextDot(from: first + 1), nextDot(from: second + 1) == nil else {
                return nil
            }
            return (first, second)
        }
        guard let (first, second) = dots else {
            let parts = bytes.reduce(1) { $1 == dot ? $0 + 1 : $0 }
            throw PurchaseRefusal(.malformed, "not a compact JWS: \(parts) dot-separated parts, not 3")
        }
        let encodedHeader = Array(bytes[..<first])
        if let known = headers?.header(for: encodedHeader) {
            header = known
        } else {
            header = try Self.decodeHeader(encodedHeader)
            headers?.insert(header, for: encodedHeader)
        }
        guard let payloadBytes = Base64URL.decode(bytes: bytes[(first + 1)..<second]) else {
            throw PurchaseRefusal(.malformed, "JWS payload is not base64url")
        }
        payload = payloadBytes
        // An empty signature (alg none) decodes to no bytes; the algorithm check refuses it.
        guard let signatureBytes = Base64URL.decode(bytes: bytes[(second + 1)...]) else {
            throw PurchaseRefusal(.malformed, "JWS signature is not base64url")
        }
        signature = signatureBytes
        signingInput = bytes[..<second]
    }

    static func decodeHeader(_ encoded: [UInt8]) throws(PurchaseRefusal) -> Header {
        guard let headerBytes = Base64URL.decode(bytes: encoded) else {
            throw PurchaseRefusal(.malformed, "JWS header is not base64url")
        }
        do {
            return try JSONDecoder().decode(Header.self, from: Data(headerBytes))
        } catch {
            throw PurchaseRefusal(.malformed, "JWS header is not a JSON object of the expected shape")
        }
    }

    /// The payload decoded as `T`, with Apple's dates (milliseconds since 1970, sometimes fractional).
    func decodePayload<T: Decodable>(_ type: T.Type) throws(PurchaseRefusal) -> T {
        do {
            return try PayloadDecoder.decode(T.self, from: payload)
        } catch {
            throw PurchaseRefusal(.malformed, "JWS payload is not a JSON object of the expected shape: \(AppStoreJSON.describe(error))")
        }
    }
}

/// JSON as the App Store writes it: read by ``PayloadDecoder``.
enum AppStoreJSON {
    /// Names the field that failed to decode, without echoing the input.
    static func describe(_ error: any Error) -> String {
        guard let error = error as? DecodingError else { return "not JSON" }
        switch error {
        case .typeMismatch(_, let context), .valueNotFound(_, let context), .keyNotFound(_, let context):
            let path = context.codingPath.map(\.stringValue).joined(separator: ".")
            return path.isEmpty ? "not a JSON object" : "field \(path) has the wrong type"
        case .dataCorrupted(let context):
            let path = context.codingPath.map(\.stringValue).joined(separator: ".")
            return path.isEmpty ? "not JSON" : "field \(path) is invalid"
        @unknown default:
            return "not JSON"
        }
    }
}
