import CatalogKit
import Foundation
import Testing

/// Which client a request came from, and which network that client is on: the address a proxy
/// may vouch for, and the keyed hash the report store counts.
@Suite struct ClientNetworkTests {
    @Test(arguments: [
        ("192.0.2.1", "192.0.2.1"), ("::ffff:192.0.2.1", "192.0.2.1"), ("2001:db8::1", "2001:db8::1"), ("::1", "::1"),
    ])
    func addressesParse(text: String, shown: String) throws {
        #expect(try #require(IPAddress(text)).description == shown)
    }

    @Test(arguments: ["", "unknown", "_hidden", "192.0.2", "192.0.2.1:80", "[::1]", "example.com", String(repeating: "1", count: 100)])
    func nonAddressesDoNot(text: String) {
        #expect(IPAddress(text) == nil)
    }

    @Test func rangesContainTheirAddresses() throws {
        let private10 = try #require(AddressRange(cidr: "10.0.0.0/8"))
        #expect(private10.contains(try #require(IPAddress("10.255.1.2"))))
        #expect(!private10.contains(try #require(IPAddress("11.0.0.1"))))
        #expect(!private10.contains(try #require(IPAddress("::ffff:11.0.0.1"))))
        #expect(private10.contains(try #require(IPAddress("::ffff:10.0.0.1"))), "mapped addresses are IPv4")
        let one = try #require(AddressRange(cidr: "2001:db8::7"))
        #expect(one.contains(try #require(IPAddress("2001:db8::7"))))
        #expect(!one.contains(try #require(IPAddress("2001:db8::8"))))
        #expect(AddressRange(cidr: "10.0.0.0/33") == nil)
        #expect(AddressRange(cidr: "10.0.0.0/") == nil)
        #expect(AddressRange(cidr: "proxy.example/8") == nil)
        #expect(AddressRange(cidr: "10.1.2.3/8")?.description == "10.0.0.0/8")
    }

    static let proxy = IPAddress("10.0.0.5")
    static let resolver = ClientAddressResolver(trustedProxies: [AddressRange(cidr: "10.0.0.0/8")!, AddressRange(cidr: "fd00::/8")!])

    struct Forwarding: Sendable, CustomTestStringConvertible {
        var name: String
        var peer: String
        var forwarded: [String] = []
        var forwardedFor: [String] = []
        var client: String
        var testDescription: String { name }
    }

    static let forwardings: [Forwarding] = [
        Forwarding(
            name: "an untrusted peer's headers are ignored", peer: "203.0.113.9", forwarded: ["for=198.51.100.1"], client: "203.0.113.9"),
        Forwarding(
            name: "an untrusted peer's X-Forwarded-For is ignored", peer: "203.0.113.9", forwardedFor: ["198.51.100.1"],
            client: "203.0.113.9"),
        Forwarding(name: "a trusted proxy without headers is the client", peer: "10.0.0.5", client: "10.0.0.5"),
        Forwarding(name: "X-Forwarded-For through one proxy", peer: "10.0.0.5", forwardedFor: ["198.51.100.1"], client: "198.51.100.1"),
        Forwarding(
            name: "a spoofed left end is skipped: the rightmost untrusted address", peer: "10.0.0.5",
            forwardedFor: ["1.2.3.4, 198.51.100.1"], client: "198.51.100.1"),
        Forwarding(
            name: "several lines and trusted hops", peer: "10.0.0.5", forwardedFor: ["6.6.6.6", "198.51.100.1, 10.1.1.1"],
            client: "198.51.100.1"),
        Forwarding(
            name: "Forwarded with quotes, IPv6 and ports", peer: "10.0.0.5",
            forwarded: [#"for=6.6.6.6, for="[2001:db8:cafe::17]:4711";proto=https;by=10.0.0.5"#], client: "2001:db8:cafe::17"),
        Forwarding(
            name: "Forwarded wins over X-Forwarded-For", peer: "10.0.0.5", forwarded: ["For=198.51.100.7"], forwardedFor: ["6.6.6.6"],
            client: "198.51.100.7"),
        Forwarding(
            name: "an unknown hop stands for no one: the nearest trusted proxy is the client", peer: "10.0.0.5",
            forwarded: ["for=198.51.100.1, for=unknown"], client: "10.0.0.5"),
        Forwarding(
            name: "garbage in X-Forwarded-For", peer: "10.0.0.5", forwardedFor: ["198.51.100.1, not-an-address"], client: "10.0.0.5"),
        Forwarding(
            name: "every hop trusted: the leftmost", peer: "10.0.0.5", forwardedFor: ["10.9.9.9, 10.1.1.1"], client: "10.9.9.9"),
        Forwarding(name: "a mapped trusted peer", peer: "::ffff:10.0.0.5", forwardedFor: ["198.51.100.1"], client: "198.51.100.1"),
        Forwarding(
            name: "a quoted comma stays in its element", peer: "10.0.0.5", forwarded: [#"for=198.51.100.1;x="a,b""#], client: "198.51.100.1"
        ),
    ]

    @Test(arguments: forwardings)
    func forwardingHeaders(_ example: Forwarding) throws {
        let client = Self.resolver.client(peer: IPAddress(example.peer)) { $0 == "forwarded" ? example.forwarded : example.forwardedFor }
        #expect(client?.description == example.client)
    }

    @Test func withoutTrustedProxiesHeadersNeverCount() {
        let client = ClientAddressResolver().client(peer: IPAddress("127.0.0.1")) { _ in ["for=198.51.100.1"] }
        #expect(client?.description == "127.0.0.1")
    }

    @Test func networksArePrefixes() throws {
        let prefixes = NetworkPrefixLengths()
        #expect(prefixes.key(of: try #require(IPAddress("192.0.2.77"))) == "192.0.2.0/24")
        #expect(prefixes.key(of: try #require(IPAddress("2001:db8:1234:5678::1"))) == "2001:db8:1234::/48")
        #expect(
            prefixes.key(of: try #require(IPAddress("2001:db8:1234:ffff::9")))
                == prefixes.key(of: try #require(IPAddress("2001:db8:1234::1"))),
            "a whole /48, every /64 in it included, is one network")
    }

    @Test func networkIDsAreKeyedHashesOfThePrefix() throws {
        let secret = [UInt8](repeating: 7, count: 32)
        let hasher = NetworkHasher(secret: secret)
        let a = hasher.networkID(of: try #require(IPAddress("192.0.2.1")))
        #expect(a.count == 32 && a.allSatisfy(\.isHexDigit))
        #expect(a == hasher.networkID(of: try #require(IPAddress("192.0.2.254"))), "same /24")
        #expect(a != hasher.networkID(of: try #require(IPAddress("192.0.3.1"))))
        #expect(!a.contains("192"), "no address in the clear")
        #expect(a != NetworkHasher(secret: [UInt8](repeating: 8, count: 32)).networkID(of: try #require(IPAddress("192.0.2.1"))))
        #expect(
            a
                != NetworkHasher(secret: secret, prefixes: NetworkPrefixLengths(ipv4: 16)).networkID(
                    of: try #require(IPAddress("192.0.2.1"))),
            "another prefix length is another network")
    }

    @Test func secretIsMadeOnceAndKept() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("secret-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: folder) }
        let url = folder.appendingPathComponent("var/report-network.secret")
        let made = try NetworkSecret.loadOrCreate(at: url)
        #expect(made.count == 32)
        #expect(try NetworkSecret.loadOrCreate(at: url) == made)
        let mode = try FileManager.default.attributesOfItem(atPath: url.path)[.posixPermissions] as? Int
        #expect(mode == 0o600)
        try Data("not hex".utf8).write(to: url)
        #expect(throws: CatalogError.self) { try NetworkSecret.loadOrCreate(at: url) }
    }
}
