/// Accept-Encoding (RFC 9110 §12.5.3), as far as choosing between gzip and identity needs.
public enum AcceptEncoding {
    /// Whether gzip is acceptable: named (or `x-gzip`, or `*`) with a non-zero quality.
    public static func acceptsGzip(_ fieldLines: [String]) -> Bool {
        var gzipQuality: Double?
        var wildcardQuality: Double?
        for line in fieldLines {
            for member in line.split(separator: ",") {
                let parts = member.split(separator: ";").map { $0.trimmingHTTPWhitespace() }
                guard let coding = parts.first?.lowercased(), !coding.isEmpty else { continue }
                var quality = 1.0
                for parameter in parts.dropFirst() {
                    let pair = parameter.split(separator: "=", maxSplits: 1).map { $0.trimmingHTTPWhitespace() }
                    if pair.count == 2, pair[0].lowercased() == "q" { quality = Double(pair[1]) ?? 0 }
                }
                switch coding {
                case "gzip", "x-gzip": gzipQuality = max(gzipQuality ?? 0, quality)
                case "*": wildcardQuality = quality
                default: break
                }
            }
        }
        return (gzipQuality ?? wildcardQuality ?? 0) > 0
    }
}
