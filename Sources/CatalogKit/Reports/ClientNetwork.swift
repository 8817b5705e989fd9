import Crypto
import Foundation

/// An IP address as its bytes: 4 for IPv4, 16 for IPv6. An IPv4-mapped IPv6 address
/// (`::ffff:192.0.2.1`) is the IPv4 address it maps, so that a dual-stack socket and a plain one
/// put the same client in the same network.
public struct IPAddress: Hashable, Sendable, CustomStringConvertible {
    /// The address in network byte order: 4 bytes for IPv4, 16 for IPv6.
    public let bytes: [UInt8]

    /// Whether it is an IPv4 address (an IPv4-mapped IPv6 one included).
    public var isIPv4: Bool { bytes.count == 4 }

    /// Parses the textual forms `inet_pton` reads; nil for anything else (host names included).
    public init?(_ text: some StringProtocol) {
        let string = String(text)
        guard !string.isEmpty, string.utf8.count <= 45 else { return nil }
        var v4 = in_addr()
        if inet_pton(AF_INET, string, &v4) == 1 {
            bytes = withUnsafeBytes(of: &v4) { Array($0) }
            return
        }
        var v6 = in6_addr()
        guard inet_pton(AF_INET6, string, &v6) == 1 else { return nil }
        let all = withUnsafeBytes(of: &v6) { Array($0) }
        let mappedPrefix: [UInt8] = [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xFF, 0xFF]
        bytes = Array(all[0..<12]) == mappedPrefix ? Array(all[12...]) : all
    }

    init(bytes: [UInt8]) {
        self.bytes = bytes
    }

    /// The address with every bit past the first `length` cleared.
    public func masked(to length: Int) -> IPAddress {
        var masked = bytes
        for index in masked.indices {
            let kept = min(max(length - index * 8, 0), 8)
            masked[index] &= kept == 8 ? 0xFF : ~(0xFF >> UInt8(kept))
        }
        return IPAddress(bytes: masked)
    }

    public var description: String {
        var buffer = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN))
        let family = isIPv4 ? AF_INET : AF_INET6
        let written = bytes.withUnsafeBytes { inet_ntop(family, $0.baseAddress, &buffer, socklen_t(buffer.count)) }
        guard written != nil else { return bytes.map { String($0) }.joined(separator: ".") }
        return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}

/// A block of addresses in CIDR notation (`10.0.0.0/8`, `2001:db8::/32`); a bare address is a
/// block of one.
public struct AddressRange: Hashable, Sendable, CustomStringConvertible {
    /// The block's first address: the one given, with every bit past the prefix cleared.
    public let network: IPAddress
    /// How many leading bits the block's addresses share.
    public let prefixLength: Int

    /// Parses `address/length`, or a bare address as a block of one; nil for anything else or a
    /// length longer than the address.
    public init?(cidr: String) {
        let parts = cidr.split(separator: "/", omittingEmptySubsequences: false)
        guard (1...2).contains(parts.count), let address = IPAddress(parts[0]) else { return nil }
        let bits = address.bytes.count * 8
        let length = parts.count == 2 ? Int(parts[1]) : bits
        guard let length, (0...bits).contains(length) else { return nil }
        network = address.masked(to: length)
        prefixLength = length
    }

    /// Whether `address` is in the block; an IPv4 address is never in an IPv6 block, nor the reverse.
    public func contains(_ address: IPAddress) -> Bool {
        address.bytes.count == network.bytes.count && address.masked(to: prefixLength) == network
    }

    public var description: String { "\(network)/\(prefixLength)" }

    /// The blocks no client on the internet comes from: loopback, private (RFC 1918), shared
    /// (RFC 6598), link-local, and IPv6 loopback, unique local (RFC 4193) and link-local.
    static let nonPublic: [AddressRange] = [
        "127.0.0.0/8", "10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16", "100.64.0.0/10", "169.254.0.0/16", "::1/128", "fc00::/7",
        "fe80::/10",
    ].compactMap { AddressRange(cidr: $0) }

    /// Whether every address of the block is in one of `nonPublic`'s: a proxy's own
    /// addresses are; a block with public addresses in it could hold clients.
    public var isNonPublic: Bool {
        Self.nonPublic.contains { $0.prefixLength <= prefixLength && $0.contains(network) }
    }
}

/// How much of a client address names its network: what one rate-limit bucket covers, and
/// what counts as one source of evidence in the feedback loop.
///
/// A network is what costs an attacker one network (docs/feedback.md, "What a network costs"):
/// - IPv4: a /24, about what one site or one customer of a provider holds.
/// - IPv6 addresses that embed an IPv4 one (6to4 `2002::/16`, Teredo `2001::/32`, NAT64
///   `64:ff9b::/96`) are that IPv4 address: anyone with one IPv4 address has a 6to4 /48 and a
///   Teredo address for free, so they count as its /24.
/// - Other IPv6: a /48 (a site's allocation) for rate limits, but a /32 (a provider's) for
///   evidence: tunnel brokers hand out /48s, even /48s by the dozen, from one /32, so a /48 is
///   too cheap to be worth one network of evidence.
public struct NetworkPrefixLengths: Sendable, Hashable {
    /// Default 24: one IPv4 /24 is about what one site or one customer of a provider holds.
    public var ipv4: Int
    /// Default 48: a site's allocation; a /64 (one LAN) or less would let one machine be many.
    public var ipv6: Int
    /// Default 32: a provider's allocation, for evidence (``NetworkHasher``) only.
    public var ipv6Evidence: Int

    /// Prefix lengths in bits, by default a /24 for IPv4, and for IPv6 a /48 for rate limits and a /32 for evidence.
    public init(ipv4: Int = 24, ipv6: Int = 48, ipv6Evidence: Int = 32) {
        self.ipv4 = ipv4
        self.ipv6 = ipv6
        self.ipv6Evidence = ipv6Evidence
    }

    /// The network `address` belongs to, as a rate-limit bucket.
    public func network(of address: IPAddress) -> IPAddress {
        let address = address.embeddedIPv4 ?? address
        return address.masked(to: address.isIPv4 ? ipv4 : ipv6)
    }

    /// `192.0.2.0/24`: the network as a rate-limit key.
    public func key(of address: IPAddress) -> String {
        let address = address.embeddedIPv4 ?? address
        return "\(network(of: address))/\(address.isIPv4 ? ipv4 : ipv6)"
    }

    /// The network `address` counts as in the evidence, and its prefix length.
    public func evidenceNetwork(of address: IPAddress) -> (network: IPAddress, length: Int) {
        let address = address.embeddedIPv4 ?? address
        let length = address.isIPv4 ? ipv4 : ipv6Evidence
        return (address.masked(to: length), length)
    }
}

extension IPAddress {
    /// The IPv4 address an IPv6 one carries, for the forms that anyone with that IPv4 address
    /// can use: 6to4 (`2002:AABB:CCDD::/48`, RFC 3056), Teredo (`2001:0::/32`, the client's
    /// public address inverted in the last 32 bits, RFC 4380) and NAT64's well-known prefix
    /// (`64:ff9b::/96`, RFC 6052). nil for an IPv4 address or any other IPv6 one.
    public var embeddedIPv4: IPAddress? {
        guard bytes.count == 16 else { return nil }
        if bytes[0] == 0x20, bytes[1] == 0x02 { return IPAddress(bytes: Array(bytes[2..<6])) }
        if bytes[0..<4] == [0x20, 0x01, 0x00, 0x00] { return IPAddress(bytes: bytes[12..<16].map { ~$0 }) }
        if bytes[0..<12] == [0x00, 0x64, 0xFF, 0x9B, 0, 0, 0, 0, 0, 0, 0, 0] { return IPAddress(bytes: Array(bytes[12..<16])) }
        return nil
    }
}

/// Names a client's network by a keyed hash of its prefix, so that the report store can count
/// distinct networks without holding a single address.
///
/// Keyed: a plain hash of an IPv4 /24 could be reversed by hashing all 16 million of them. The key
/// is a server secret: a file beside a SQLite store (``NetworkSecret``), or a row that every node
/// of a PostgreSQL store reads, so that nodes on one store never disagree.
public struct NetworkHasher: Sendable {
    /// Bytes rather than a `SymmetricKey`, which is not `Sendable`; making one per hash is cheap.
    private let secret: [UInt8]
    /// How much of an address names its network.
    public let prefixes: NetworkPrefixLengths

    /// A hasher keyed by `secret` (``NetworkSecret``), naming networks by `prefixes`.
    public init(secret: [UInt8], prefixes: NetworkPrefixLengths = NetworkPrefixLengths()) {
        self.secret = secret
        self.prefixes = prefixes
    }

    /// 32 hexadecimal digits (128 bits of HMAC-SHA256) naming the network `address` counts as
    /// in the evidence (``NetworkPrefixLengths/evidenceNetwork(of:)``).
    public func networkID(of address: IPAddress) -> String {
        let (network, length) = prefixes.evidenceNetwork(of: address)
        var mac = HMAC<SHA256>(key: SymmetricKey(data: secret))
        // The prefix length is hashed too: the same bits under another configured length are
        // another network.
        mac.update(data: network.bytes + [UInt8(length)])
        return ContentHash.hex(mac.finalize().prefix(16))
    }
}

/// The secret behind ``NetworkHasher``: 32 random bytes in a file of its own (hexadecimal, mode
/// 0600), made on first use. Replicas that share a store must share this file, or each counts
/// the same network under another name.
public enum NetworkSecret {
    /// The secret's length in bytes: 256 bits, written as 64 hexadecimal digits.
    public static let byteCount = 32

    /// Reads the secret at `url`, creating it (and its folder) if there is none.
    public static func loadOrCreate(at url: URL) throws -> [UInt8] {
        if let existing = try read(url) { return existing }
        try FileManager.default.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
        let secret = SymmetricKey(size: .bits256).withUnsafeBytes { Array($0) }
        let text = Array((ContentHash.hex(secret) + "\n").utf8)
        // O_EXCL: two servers starting together must not both write; the loser reads the winner's.
        let descriptor = open(url.path, O_WRONLY | O_CREAT | O_EXCL, 0o600)
        if descriptor < 0 {
            if errno == EEXIST, let existing = try read(url) { return existing }
            throw CatalogError.io(path: url.path, message: "cannot create the report network secret: \(String(cString: strerror(errno)))")
        }
        defer { close(descriptor) }
        let written = text.withUnsafeBytes { write(descriptor, $0.baseAddress, $0.count) }
        guard written == text.count, fsync(descriptor) == 0 else {
            throw CatalogError.io(path: url.path, message: "cannot write the report network secret")
        }
        // A secret lost in a crash would be made anew, and every network renamed.
        try AtomicFile.syncDirectory(url.deletingLastPathComponent())
        return secret
    }

    /// The secret in `url`; nil when there is no file. A file that holds anything but 64
    /// hexadecimal digits is an error, never silently replaced: a new secret renames every network.
    public static func read(_ url: URL) throws -> [UInt8]? {
        guard let data = FileManager.default.contents(atPath: url.path) else { return nil }
        let text = String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        guard text.utf8.count == byteCount * 2, let bytes = ContentHash.bytes(hex: text) else {
            throw CatalogError.io(path: url.path, message: "the report network secret must be \(byteCount * 2) hexadecimal digits")
        }
        return bytes
    }
}
