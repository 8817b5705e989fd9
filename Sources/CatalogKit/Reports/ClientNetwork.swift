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
}

/// Which client a request came from: the socket's peer, or, only when that peer is a trusted
/// proxy, the address the proxies say they forwarded for.
///
/// Forwarding headers are chains that every hop appends to, so only their right end is
/// trustworthy: the resolver walks from the right past the trusted proxies and takes the first
/// address that is not one of them. Anything to the left of it was written by the client itself.
public struct ClientAddressResolver: Sendable {
    /// The proxies whose forwarding headers are believed, such as a load balancer's addresses.
    public var trustedProxies: [AddressRange]

    /// A resolver that believes the forwarding headers of these proxies only; by default none, so the peer is the client.
    public init(trustedProxies: [AddressRange] = []) {
        self.trustedProxies = trustedProxies
    }

    func isTrusted(_ address: IPAddress) -> Bool {
        trustedProxies.contains { $0.contains(address) }
    }

    /// The client's address.
    ///
    /// - Parameters:
    ///   - peer: the socket's remote address; nil when unknown (a Unix socket).
    ///   - fields: every line of a header field, in order, by its lower-case name. Asked only when
    ///     the peer is trusted, so that the common case reads no header. `forwarded` (RFC 7239) is
    ///     read in preference to `x-forwarded-for` when present.
    /// - Returns: the peer when it is not a trusted proxy or no header names anyone; otherwise the
    ///   rightmost forwarded address that is not a trusted proxy. When that element is not an
    ///   address (`unknown`, an obfuscated name), the nearest trusted hop stands for the client:
    ///   nothing to its left can be believed.
    public func client(peer: IPAddress?, fields: (String) -> [String]) -> IPAddress? {
        guard let peer, isTrusted(peer) else { return peer }
        let forwarded = fields("forwarded")
        let chain = !forwarded.isEmpty ? Self.forwardedChain(forwarded) : Self.forwardedForChain(fields("x-forwarded-for"))
        var nearest = peer
        for element in chain.reversed() {
            guard let address = element else { return nearest }
            if !isTrusted(address) { return address }
            nearest = address
        }
        return nearest
    }

    /// The `for=` address of each element of `Forwarded` lines, left to right; nil for an
    /// element whose `for` is missing or not an address.
    static func forwardedChain(_ lines: [String]) -> [IPAddress?] {
        lines.flatMap { splitOutsideQuotes($0, on: ",") }.map { element in
            for pair in splitOutsideQuotes(element, on: ";") {
                guard let equals = pair.firstIndex(of: "=") else { continue }
                let name = pair[..<equals].trimmingCharacters(in: .whitespaces).lowercased()
                guard name == "for" else { continue }
                var value = pair[pair.index(after: equals)...].trimmingCharacters(in: .whitespaces)
                if value.hasPrefix("\""), value.hasSuffix("\""), value.count >= 2 { value = String(value.dropFirst().dropLast()) }
                return address(hostAndPort: value)
            }
            return nil
        }
    }

    /// The addresses of `X-Forwarded-For` lines, left to right.
    static func forwardedForChain(_ lines: [String]) -> [IPAddress?] {
        lines.flatMap { $0.split(separator: ",", omittingEmptySubsequences: false) }.map {
            address(hostAndPort: $0.trimmingCharacters(in: .whitespaces))
        }
    }

    /// `192.0.2.1`, `192.0.2.1:4711`, `[2001:db8::1]`, `[2001:db8::1]:4711` or `2001:db8::1`.
    static func address(hostAndPort text: String) -> IPAddress? {
        if text.hasPrefix("["), let close = text.firstIndex(of: "]") {
            return IPAddress(text[text.index(after: text.startIndex)..<close])
        }
        if let plain = IPAddress(text) { return plain }
        if let colon = text.lastIndex(of: ":"), text.firstIndex(of: ":") == colon { return IPAddress(text[..<colon]) }
        return nil
    }

    /// Splits at `separator` except inside double quotes (RFC 7230 quoted-string, with `\` escapes).
    private static func splitOutsideQuotes(_ text: String, on separator: Character) -> [String] {
        var parts: [String] = []
        var current = ""
        var quoted = false
        var escaped = false
        for character in text {
            if escaped {
                escaped = false
            } else if quoted && character == "\\" {
                escaped = true
            } else if character == "\"" {
                quoted.toggle()
            } else if character == separator && !quoted {
                parts.append(current)
                current = ""
                continue
            }
            current.append(character)
        }
        parts.append(current)
        return parts
    }
}

/// How much of a client address names its network: what counts as one source of evidence in
/// the feedback loop, and what one rate-limit bucket covers.
public struct NetworkPrefixLengths: Sendable, Hashable {
    /// Default 24: one IPv4 /24 is about what one site or one customer of a provider holds.
    public var ipv4: Int
    /// Default 48: a site's allocation; a /64 (one LAN) or less would let one machine be many.
    public var ipv6: Int

    /// Prefix lengths in bits, by default a /24 for IPv4 and a /48 for IPv6.
    public init(ipv4: Int = 24, ipv6: Int = 48) {
        self.ipv4 = ipv4
        self.ipv6 = ipv6
    }

    /// The network `address` belongs to.
    public func network(of address: IPAddress) -> IPAddress {
        address.masked(to: address.isIPv4 ? ipv4 : ipv6)
    }

    /// `192.0.2.0/24`: the network as a rate-limit key.
    public func key(of address: IPAddress) -> String {
        "\(network(of: address))/\(address.isIPv4 ? ipv4 : ipv6)"
    }
}

/// Names a client's network by a keyed hash of its prefix, so that the report store can count
/// distinct networks without holding a single address.
///
/// Keyed: a plain hash of an IPv4 /24 could be reversed by hashing all 16 million of them. The key
/// is a server secret kept beside the store (``NetworkSecret``), never inside it.
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

    /// 32 hexadecimal digits (128 bits of HMAC-SHA256) naming `address`'s network.
    public func networkID(of address: IPAddress) -> String {
        let network = prefixes.network(of: address)
        // The prefix length is hashed too: the same bits under another configured length are
        // another network.
        let length = UInt8(address.isIPv4 ? prefixes.ipv4 : prefixes.ipv6)
        var mac = HMAC<SHA256>(key: SymmetricKey(data: secret))
        mac.update(data: network.bytes + [length])
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
