import CatalogKit

/// The one forwarding header a trusted proxy writes (`--trusted-proxy-header`).
///
/// Only one is read: a proxy appends to (or overwrites) the header it writes and passes every
/// other header through untouched, so a client could write the other one itself. nginx's
/// `$proxy_add_x_forwarded_for`, HAProxy's `option forwardfor` and most load balancers and CDNs
/// write `X-Forwarded-For`, the default; RFC 7239's `Forwarded` only where the proxy writes it.
public enum ForwardingHeader: String, Sendable, CaseIterable, CustomStringConvertible {
    case xForwardedFor = "x-forwarded-for"
    case forwarded

    /// The header's name in lower case, as the setting takes it.
    public var description: String { rawValue }
}

/// Where a request's client address came from, for the access log (`client.via`).
public enum ClientAddressSource: Sendable, Hashable, CustomStringConvertible {
    /// The socket's peer: no trusted proxy, or a trusted one that named no one usable.
    case peer
    /// Element `hop` of the trusted proxy's header, counted from its right end (1 is the
    /// element the proxy that connected to this server wrote).
    case header(ForwardingHeader, hop: Int)

    /// `peer`, or the header and the hop: `x-forwarded-for:1`.
    public var description: String {
        switch self {
        case .peer: "peer"
        case .header(let header, let hop): "\(header.rawValue):\(hop)"
        }
    }
}

/// A request's client: its address and where that came from.
public struct ClientAddress: Sendable, Hashable {
    /// The address the rate limits, the evidence and the access log count.
    public var address: IPAddress
    /// Which hop named it.
    public var source: ClientAddressSource

    /// The socket's peer as the client.
    public init(peer address: IPAddress) {
        self.address = address
        source = .peer
    }

    init(address: IPAddress, source: ClientAddressSource) {
        self.address = address
        self.source = source
    }
}

/// Which client a request came from: the socket's peer, or, only when that peer is a trusted
/// proxy, the address that proxy says it forwarded for, in the one header it writes.
///
/// Forwarding headers are chains that every hop appends to, so only their right end is
/// trustworthy: the resolver walks from the right past the trusted proxies and takes the first
/// address that is not one of them. Anything to the left of it was written by the client itself.
/// The other header is never read: whatever a client puts in it reaches the server untouched.
public struct ClientAddressResolver: Sendable {
    /// The proxies whose forwarding header is believed, such as a load balancer's addresses.
    public var trustedProxies: [AddressRange]
    /// The header those proxies write.
    public var header: ForwardingHeader

    /// A resolver that believes `header` from these proxies only; by default no proxy, so the peer is the client.
    public init(trustedProxies: [AddressRange] = [], header: ForwardingHeader = .xForwardedFor) {
        self.trustedProxies = trustedProxies
        self.header = header
    }

    func isTrusted(_ address: IPAddress) -> Bool {
        trustedProxies.contains { $0.contains(address) }
    }

    /// The client.
    ///
    /// - Parameters:
    ///   - peer: the socket's remote address; nil when unknown (a Unix socket).
    ///   - fields: every line of a header field, in order, by its lower-case name. Asked only
    ///     when the peer is trusted, so that the common case reads no header, and only for
    ///     ``header``.
    /// - Returns: the peer when it is not a trusted proxy or the header names no one; otherwise
    ///   the rightmost forwarded address that is not a trusted proxy. When that element is not an
    ///   address (`unknown`, an obfuscated name), the nearest trusted hop stands for the client:
    ///   nothing to its left can be believed.
    public func client(peer: IPAddress?, fields: (String) -> [String]) -> ClientAddress? {
        guard let peer else { return nil }
        var nearest = ClientAddress(peer: peer)
        guard isTrusted(peer) else { return nearest }
        let lines = fields(header.rawValue)
        let chain = header == .forwarded ? Self.forwardedChain(lines) : Self.forwardedForChain(lines)
        for (offset, element) in chain.reversed().enumerated() {
            guard let address = element else { return nearest }
            let hop = ClientAddress(address: address, source: .header(header, hop: offset + 1))
            if !isTrusted(address) { return hop }
            nearest = hop
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
