import Crypto
import Foundation

/// The `Catalog-Signature` header of a webhook, Stripe's shape: `t=UNIX-SECONDS,v1=HEX`, where the
/// hex is the HMAC-SHA256, keyed by the app's webhook secret, of `t`, a full stop and the body
/// (docs/purchases.md, "Webhooks"). The timestamp is signed with the body, so a receiver that
/// refuses old timestamps refuses replays.
public enum WebhookSignature {
    /// The header's name.
    public static let header = "Catalog-Signature"
    /// How far a receiver should let a timestamp be from its own clock, by default.
    public static let defaultTolerance: TimeInterval = 300

    /// Why a signature is refused.
    public enum Failure: Error, Sendable, Hashable, CustomStringConvertible {
        /// The header is not `t=…,v1=…`.
        case malformed
        /// The timestamp is further from now than the tolerance: a replay, or a wrong clock.
        case outsideTolerance
        /// No `v1` matches the body and timestamp: altered, or signed with another secret.
        case mismatch

        public var description: String {
            switch self {
            case .malformed: "the signature header is not t=SECONDS,v1=HEX"
            case .outsideTolerance: "the signature's timestamp is outside the tolerance (a replay, or a clock that is off)"
            case .mismatch: "no signature matches the body and timestamp"
            }
        }
    }

    /// The header value for `body` sent at `timestamp` (whole seconds since 1970).
    public static func sign(body: [UInt8], secret: [UInt8], timestamp: Int64) -> String {
        "t=\(timestamp),v1=\(hex(mac(body: body, secret: secret, timestamp: timestamp)))"
    }

    /// Checks `header` against `body`: a `v1` must match, in constant time, and `t` be within
    /// `tolerance` of `now`. Several `v1` are allowed, for a secret being rotated.
    public static func verify(
        header: String, body: [UInt8], secret: [UInt8], now: Date, tolerance: TimeInterval = defaultTolerance
    ) throws(Failure) {
        var timestamp: Int64?
        var signatures: [[UInt8]] = []
        for item in header.split(separator: ",") {
            let pair = item.split(separator: "=", maxSplits: 1).map { $0.trimmingCharacters(in: .whitespaces) }
            guard pair.count == 2 else { throw .malformed }
            switch pair[0] {
            case "t": timestamp = Int64(pair[1])
            case "v1":
                guard let bytes = unhex(pair[1]) else { throw .malformed }
                signatures.append(bytes)
            default: continue
            }
        }
        guard let timestamp, !signatures.isEmpty else { throw .malformed }
        guard abs(now.timeIntervalSince1970 - TimeInterval(timestamp)) <= tolerance else { throw .outsideTolerance }
        let key = SymmetricKey(data: secret)
        let message = Array("\(timestamp).".utf8) + body
        guard signatures.contains(where: { HMAC<SHA256>.isValidAuthenticationCode($0, authenticating: message, using: key) }) else {
            throw .mismatch
        }
    }

    private static func mac(body: [UInt8], secret: [UInt8], timestamp: Int64) -> [UInt8] {
        Array(HMAC<SHA256>.authenticationCode(for: Array("\(timestamp).".utf8) + body, using: SymmetricKey(data: secret)))
    }

    private static func hex(_ bytes: [UInt8]) -> String { bytes.map { String(format: "%02x", $0) }.joined() }

    private static func unhex(_ text: String) -> [UInt8]? {
        let characters = Array(text.utf8)
        guard characters.count % 2 == 0 else { return nil }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(characters.count / 2)
        var index = 0
        while index < characters.count {
            guard let high = nibble(characters[index]), let low = nibble(characters[index + 1]) else { return nil }
            bytes.append(high << 4 | low)
            index += 2
        }
        return bytes
    }

    private static func nibble(_ character: UInt8) -> UInt8? {
        switch character {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): character - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): character - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): character - UInt8(ascii: "A") + 10
        default: nil
        }
    }
}
