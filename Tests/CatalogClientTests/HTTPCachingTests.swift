import Foundation
import Testing

@testable import CatalogClient

/// Headers a proxy or CDN may send, however odd: the client reads them without trapping and
/// errs toward revalidating.
@Suite struct HTTPCachingTests {
    @Test(
        arguments: [
            ("public, max-age=300", 300.0), ("max-age=\"60\"", 60), ("MAX-AGE=10", 10), ("max-age=300, no-cache", nil),
            ("no-store", nil), ("", nil), ("=", nil), (",,,", nil), ("=, max-age=5", 5), ("max-age=", 0), ("max-age", 0),
            ("max-age=-5", 0), ("max-age=1e9", 0), ("max-age=abc", 0), ("max-age=5, max-age=6", 0), ("max-age==5", 0),
            ("max-age=99999999999999999999999999", 2_147_483_648), (" = ,  ;; , max-age = 7 ", 7), ("\u{0}", nil),
        ] as [(String, TimeInterval?)])
    func cacheControlNeverTraps(header: String, lifetime: TimeInterval?) {
        #expect(CachePolicy(cacheControl: header, age: nil).freshnessLifetime == lifetime)
    }

    @Test func ageShortensWhatIsLeft() {
        #expect(CachePolicy(cacheControl: "max-age=300", age: "100").freshnessLifetime == 200)
        #expect(CachePolicy(cacheControl: "max-age=300", age: "900").freshnessLifetime == 0)
        #expect(CachePolicy(cacheControl: "max-age=300", age: "junk").freshnessLifetime == 300)
        #expect(CachePolicy(cacheControl: "max-age=300", age: "-9").freshnessLifetime == 300)
    }

    static let now = Date(timeIntervalSince1970: 784_111_700)  // 1994-11-06T08:48:20Z

    @Test(
        arguments: [
            ("120", 120.0), ("0", 0), ("Sun, 06 Nov 1994 08:49:37 GMT", 77), ("Sunday, 06-Nov-94 08:49:37 GMT", 77),
            ("Sun Nov  6 08:49:37 1994", 77), ("Sun, 06 Nov 1994 08:00:00 GMT", 0), ("-5", nil), ("soon", nil), ("", nil),
        ] as [(String, TimeInterval?)])
    func retryAfterReadsEveryForm(header: String, delay: TimeInterval?) {
        #expect(retryAfterDelay(header, now: Self.now) == delay)
    }
}
