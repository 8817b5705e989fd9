import CatalogKit
import Foundation
import HTTPTypes
import Logging
import Synchronization
import Time

/// `--log-format json`: one JSON object per line on standard error (`time`, `level`, `label`,
/// `message`, then the metadata), for log shippers; `text` is swift-log's own stream format.
///
/// Written by hand, not by `JSONEncoder`: with `--access-log on` a line is written per request, and
/// an encoder cost a median 16.0 µs more server CPU per report (`BENCH_SERVE_ARGS="--access-log on
/// --log-format json" scripts/bench-ingest`, 3 pairs, slower in each; docs/benchmarks.md, "JSON on
/// the report path").
public struct JSONLogHandler: LogHandler {
    public var logLevel: Logger.Level = .info
    public var metadata: Logger.Metadata = [:]
    private let label: String
    /// One line at a time: lines from different threads never interleave.
    private static let output = Mutex(())

    public init(label: String) {
        self.label = label
    }

    public subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    public func log(event: LogEvent) {
        var json = JSONWriter()
        json.beginObject()
        json.key("time")
        json.string(Timestamp.now.iso8601)
        json.key("level")
        json.string(event.level.rawValue)
        json.key("label")
        json.string(label)
        json.key("message")
        json.string(event.message.description)
        for (key, value) in metadata.merging(event.metadata ?? [:], uniquingKeysWith: { $1 }).sorted(by: { $0.key < $1.key }) {
            json.key(key)
            json.string(value.description)
        }
        json.endObject()
        let line = json.bytes + [0x0A]
        Self.output.withLock { _ in FileHandle.standardError.write(Data(line)) }
    }
}

extension AccessLog {
    func client(_ client: ClientAddress?) -> String {
        guard let address = client?.address else { return "-" }
        return fullAddresses ? address.description : prefixes.key(of: address)
    }

    /// The client's `X-Request-Id`, logged as `request.id` when it is a plain token; otherwise
    /// (or without one) the line gets an id of its own.
    static let requestIDField = HTTPField.Name("X-Request-Id")!
    private static let idPrefix = String(UInt32.random(in: .min ... .max), radix: 16)
    private static let counter = Atomic<UInt64>(0)

    static func requestID(_ given: String?) -> String {
        if let given, (1...64).contains(given.utf8.count),
            given.utf8.allSatisfy({ (0x21...0x7E).contains($0) && $0 != UInt8(ascii: "\"") && $0 != UInt8(ascii: "\\") })
        {
            return given
        }
        return "\(idPrefix)-\(counter.add(1, ordering: .relaxed).newValue)"
    }

    /// One line; `reportID` is the key a 202 stored its report under, which ties the acceptance
    /// to the committed row.
    func record(
        method: String, path: String, status: Int, bytes: Int, started: ContinuousClock.Instant, client: ClientAddress?,
        requestID: String? = nil, reportID: String? = nil
    ) {
        guard enabled else { return }
        let elapsed = ContinuousClock.now - started
        let milliseconds = Double(elapsed.components.seconds) * 1000 + Double(elapsed.components.attoseconds) / 1e15
        var metadata: Logger.Metadata = [
            "http.method": "\(method)", "http.path": "\(path)", "http.status": "\(status)", "http.bytes": "\(bytes)",
            "duration_ms": "\(String(format: "%.3f", milliseconds))", "client.network": "\(self.client(client))",
            "client.via": "\(client?.source.description ?? "-")",
            "request.id": "\(Self.requestID(requestID))",
        ]
        if let reportID { metadata["report.id"] = "\(reportID)" }
        logger.info("request", metadata: metadata)
    }
}
