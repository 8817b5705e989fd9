import CatalogKit
import CatalogServer
import Testing

/// Which client a request came from: the address a trusted proxy vouches for, in the one header
/// it writes, and which hop named it.
@Suite struct ClientAddressResolverTests {
    static let trusted = [AddressRange(cidr: "10.0.0.0/8")!, AddressRange(cidr: "fd00::/8")!]

    struct Forwarding: Sendable, CustomTestStringConvertible {
        var name: String
        var header = ForwardingHeader.xForwardedFor
        var peer: String
        var forwarded: [String] = []
        var forwardedFor: [String] = []
        var client: String
        var via: String
        var testDescription: String { name }
    }

    static let forwardings: [Forwarding] = [
        Forwarding(
            name: "an untrusted peer's headers are ignored", header: .forwarded, peer: "203.0.113.9", forwarded: ["for=198.51.100.1"],
            client: "203.0.113.9", via: "peer"),
        Forwarding(
            name: "an untrusted peer's X-Forwarded-For is ignored", peer: "203.0.113.9", forwardedFor: ["198.51.100.1"],
            client: "203.0.113.9", via: "peer"),
        Forwarding(name: "a trusted proxy without headers is the client", peer: "10.0.0.5", client: "10.0.0.5", via: "peer"),
        Forwarding(
            name: "X-Forwarded-For through one proxy", peer: "10.0.0.5", forwardedFor: ["198.51.100.1"], client: "198.51.100.1",
            via: "x-forwarded-for:1"),
        Forwarding(
            name: "a spoofed left end is skipped: the rightmost untrusted address", peer: "10.0.0.5",
            forwardedFor: ["1.2.3.4, 198.51.100.1"], client: "198.51.100.1", via: "x-forwarded-for:1"),
        Forwarding(
            name: "several lines and trusted hops", peer: "10.0.0.5", forwardedFor: ["6.6.6.6", "198.51.100.1, 10.1.1.1"],
            client: "198.51.100.1", via: "x-forwarded-for:2"),
        Forwarding(
            name: "Forwarded with quotes, IPv6 and ports", header: .forwarded, peer: "10.0.0.5",
            forwarded: [#"for=6.6.6.6, for="[2001:db8:cafe::17]:4711";proto=https;by=10.0.0.5"#], client: "2001:db8:cafe::17",
            via: "forwarded:1"),
        // The attack of issue 26: nginx appends X-Forwarded-For and passes a client's Forwarded
        // through untouched; reading Forwarded let one machine name any network.
        Forwarding(
            name: "a client's Forwarded through a proxy that writes X-Forwarded-For is never read", peer: "10.0.0.5",
            forwarded: ["For=198.51.100.7"], forwardedFor: ["6.6.6.6"], client: "6.6.6.6", via: "x-forwarded-for:1"),
        Forwarding(
            name: "a client's Forwarded alone through a proxy that writes X-Forwarded-For names no one", peer: "10.0.0.5",
            forwarded: ["for=198.51.100.7"], client: "10.0.0.5", via: "peer"),
        Forwarding(
            name: "a client's X-Forwarded-For through a proxy that writes Forwarded is never read", header: .forwarded, peer: "10.0.0.5",
            forwarded: ["for=198.51.100.7"], forwardedFor: ["6.6.6.6"], client: "198.51.100.7", via: "forwarded:1"),
        Forwarding(
            name: "an unknown hop stands for no one: the nearest trusted proxy is the client", header: .forwarded, peer: "10.0.0.5",
            forwarded: ["for=198.51.100.1, for=unknown"], client: "10.0.0.5", via: "peer"),
        Forwarding(
            name: "garbage in X-Forwarded-For", peer: "10.0.0.5", forwardedFor: ["198.51.100.1, not-an-address"], client: "10.0.0.5",
            via: "peer"),
        Forwarding(
            name: "every hop trusted: the leftmost", peer: "10.0.0.5", forwardedFor: ["10.9.9.9, 10.1.1.1"], client: "10.9.9.9",
            via: "x-forwarded-for:2"),
        Forwarding(
            name: "a mapped trusted peer", peer: "::ffff:10.0.0.5", forwardedFor: ["198.51.100.1"], client: "198.51.100.1",
            via: "x-forwarded-for:1"),
        Forwarding(
            name: "a quoted comma stays in its element", header: .forwarded, peer: "10.0.0.5", forwarded: [#"for=198.51.100.1;x="a,b""#],
            client: "198.51.100.1", via: "forwarded:1"),
    ]

    @Test(arguments: forwardings)
    func forwardingHeaders(_ example: Forwarding) throws {
        let resolver = ClientAddressResolver(trustedProxies: Self.trusted, header: example.header)
        let client = resolver.client(peer: IPAddress(example.peer)) { name in
            switch name {
            case "forwarded": example.forwarded
            case "x-forwarded-for": example.forwardedFor
            default: []
            }
        }
        #expect(client?.address.description == example.client)
        #expect(client?.source.description == example.via)
    }

    @Test func withoutTrustedProxiesHeadersNeverCount() {
        for header in ForwardingHeader.allCases {
            let client = ClientAddressResolver(header: header).client(peer: IPAddress("127.0.0.1")) { _ in ["198.51.100.1"] }
            #expect(client?.address.description == "127.0.0.1")
            #expect(client?.source == .peer)
        }
    }
}
