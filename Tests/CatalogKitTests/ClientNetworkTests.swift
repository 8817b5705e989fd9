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

    @Test func networksArePrefixes() throws {
        let prefixes = NetworkPrefixLengths()
        #expect(prefixes.key(of: try #require(IPAddress("192.0.2.77"))) == "192.0.2.0/24")
        #expect(prefixes.key(of: try #require(IPAddress("2001:db8:1234:5678::1"))) == "2001:db8:1234::/48")
        #expect(
            prefixes.key(of: try #require(IPAddress("2001:db8:1234:ffff::9")))
                == prefixes.key(of: try #require(IPAddress("2001:db8:1234::1"))),
            "a whole /48, every /64 in it included, is one network")
    }

    /// Anyone with one IPv4 address has a 6to4 /48 and Teredo addresses for free: they are that
    /// address's /24, for rate limits and evidence alike.
    @Test(arguments: [
        ("2002:c000:0207::1", "192.0.2.7"), ("2002:c000:02ff:1234::9", "192.0.2.255"),
        // Teredo: server 65.54.227.120, client 192.0.2.45 port 40000, both obfuscated as RFC 4380 says.
        ("2001:0:4136:e378:8000:63bf:3fff:fdd2", "192.0.2.45"), ("64:ff9b::c000:20b", "192.0.2.11"),
    ])
    func addressesThatEmbedIPv4AreTheirIPv4(text: String, embedded: String) throws {
        let address = try #require(IPAddress(text))
        let ipv4 = try #require(IPAddress(embedded))
        #expect(address.embeddedIPv4 == ipv4)
        let prefixes = NetworkPrefixLengths()
        #expect(prefixes.key(of: address) == "192.0.2.0/24")
        let hasher = NetworkHasher(secret: [UInt8](repeating: 7, count: 32))
        #expect(hasher.networkID(of: address) == hasher.networkID(of: try #require(IPAddress("192.0.2.200"))))
        #expect(IPAddress("2001:db8::1")?.embeddedIPv4 == nil, "2001:db8::/32 is not Teredo")
        #expect(IPAddress("192.0.2.1")?.embeddedIPv4 == nil)
    }

    /// A tunnel broker hands out /48s by the dozen from one /32: as evidence, the whole /32 is
    /// one network, while each /48 keeps its own rate limit.
    @Test func ipv6EvidenceCountsAProvidersAllocationOnce() throws {
        let hasher = NetworkHasher(secret: [UInt8](repeating: 7, count: 32))
        let broker = (0..<20).map { IPAddress("2001:470:\(String($0 + 1, radix: 16))::1")! }
        #expect(Set(broker.map(hasher.networkID(of:))).count == 1, "twenty /48s of one /32 are one network of evidence")
        #expect(Set(broker.map(hasher.prefixes.key(of:))).count == 20, "and twenty rate-limit buckets")
        #expect(
            hasher.networkID(of: try #require(IPAddress("2001:470::1"))) != hasher.networkID(of: try #require(IPAddress("2a00:1450::1"))))
        let per48 = NetworkHasher(secret: [UInt8](repeating: 7, count: 32), prefixes: NetworkPrefixLengths(ipv6Evidence: 48))
        #expect(Set(broker.map(per48.networkID(of:))).count == 20, "--report-evidence-ipv6-prefix 48 counts /48s")
    }

    /// `--trusted-proxy` warns when a block could hold clients.
    @Test(arguments: [
        ("127.0.0.1", true), ("10.0.0.0/8", true), ("192.168.4.0/24", true), ("fd00::/8", true), ("::1", true),
        ("0.0.0.0/0", false), ("::/0", false), ("8.0.0.0/8", false), ("10.0.0.0/7", false), ("203.0.113.7", false),
    ])
    func proxyBlocksArePublicOrNot(cidr: String, nonPublic: Bool) throws {
        #expect(try #require(AddressRange(cidr: cidr)).isNonPublic == nonPublic)
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
