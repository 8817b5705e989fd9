import HTTPSemantics
import Testing

/// Choosing gzip from Accept-Encoding (RFC 9110 §12.5.3): moved from FeedServingTests.
@Suite struct AcceptEncodingTests {
    @Test(arguments: [
        ([String](), false),
        (["gzip"], true),
        (["GZIP"], true),
        (["x-gzip"], true),
        (["deflate, gzip;q=0.5"], true),
        (["gzip;q=0"], false),
        (["gzip; q=0.000"], false),
        (["*"], true),
        (["*;q=0"], false),
        (["*, gzip;q=0"], false),
        (["identity"], false),
        (["br", "gzip"], true),
        (["br;q=1.0, deflate"], false),
    ])
    func acceptEncoding(fieldLines: [String], acceptsGzip: Bool) {
        #expect(AcceptEncoding.acceptsGzip(fieldLines) == acceptsGzip)
    }
}
