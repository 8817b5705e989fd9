import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// One HTTP exchange: a status, the headers the client reads, and the body.
struct HTTPAnswer: Sendable {
    var status: Int
    var headers: [String: String]
    var body: Data

    /// Header names are case-insensitive; URLSession keeps the server's spelling.
    func header(_ name: String) -> String? {
        headers.first { $0.key.caseInsensitiveCompare(name) == .orderedSame }?.value
    }
}

/// URLSession set up for a client that does its own HTTP caching, reading at most
/// `maximumResponseBytes` of any answer.
struct HTTPTransport: Sendable {
    let session: URLSession
    /// The largest body read, counted after decompression (URLSession decodes gzip by itself).
    let maximumResponseBytes: Int
    private let collector = BodyCollector()

    init(timeout: TimeInterval, maximumResponseBytes: Int) {
        self.maximumResponseBytes = max(maximumResponseBytes, 0)
        #if canImport(FoundationNetworking)
            // swift-corelibs-foundation truncates timeouts to whole seconds: 0.5 s would be 0,
            // which fails every request at once.
            let timeout = max(timeout.rounded(.up), 1)
        #endif
        let configuration = URLSessionConfiguration.ephemeral
        // The client keeps its own cache with validators; URLSession's would answer revalidations
        // itself and hide the 304s (and their savings) from the client and from tests.
        configuration.urlCache = nil
        configuration.requestCachePolicy = .reloadIgnoringLocalCacheData
        // Fail at once offline rather than wait for connectivity: the caller has a cached or
        // bundled list to fall back on, and an app launch must not hang on the network.
        #if !canImport(FoundationNetworking)
            configuration.waitsForConnectivity = false  // read-only, and always false, on Linux
        #endif
        configuration.timeoutIntervalForRequest = timeout
        configuration.timeoutIntervalForResource = timeout * 3
        configuration.httpCookieStorage = nil
        configuration.httpShouldSetCookies = false
        // A delegate rather than completion handlers: the body arrives chunk by chunk, already
        // decompressed, and the collector stops the task at the cap instead of holding whatever a
        // hostile mirror's gzip bomb inflates to.
        session = URLSession(configuration: configuration, delegate: collector, delegateQueue: nil)
    }

    /// Sends `request`; a failure to get any HTTP answer is a `.transport` error, and an answer
    /// over ``maximumResponseBytes`` a `.responseTooLarge` one.
    func send(_ request: URLRequest) async -> Result<HTTPAnswer, CatalogClientError> {
        // Session delegate callbacks rather than `data(for:)` or `bytes(for:)`: available on every
        // OS version the library supports, and the same code path on Linux.
        let box = TaskBox()
        let limit = maximumResponseBytes
        let collector = self.collector
        return await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                let task = session.dataTask(with: request)
                collector.begin(task, limit: limit) { continuation.resume(returning: $0) }
                box.set(task)
                task.resume()
            }
        } onCancel: {
            box.cancel()
        }
    }
}

/// The session's delegate: collects each task's body and finishes its `send`, stopping a task
/// whose answer is larger than its limit, declared (`Content-Length`) or received (decoded).
private final class BodyCollector: NSObject, URLSessionDataDelegate, @unchecked Sendable {
    // @unchecked: `exchanges` is only touched while holding `lock`.
    private let lock = NSLock()
    private var exchanges: [Int: Exchange] = [:]

    private struct Exchange {
        let limit: Int
        let finish: @Sendable (Result<HTTPAnswer, CatalogClientError>) -> Void
        var body = Data()
        var refusal: CatalogClientError?
    }

    /// Registers `task` before it is resumed, so that no callback can come first.
    func begin(_ task: URLSessionTask, limit: Int, finish: @escaping @Sendable (Result<HTTPAnswer, CatalogClientError>) -> Void) {
        lock.lock()
        exchanges[task.taskIdentifier] = Exchange(limit: limit, finish: finish)
        lock.unlock()
    }

    func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive data: Data) {
        // Checked on the data rather than in the response callback, whose disposition
        // swift-corelibs-foundation ignores: the first chunk is as early as the body can be refused.
        let declared = dataTask.response?.expectedContentLength ?? -1
        lock.lock()
        guard var exchange = exchanges[dataTask.taskIdentifier], exchange.refusal == nil else {
            lock.unlock()
            return
        }
        let url = dataTask.originalRequest?.url?.absoluteString ?? "?"
        if declared > Int64(exchange.limit) {
            exchange.refusal = Self.tooLarge(url, "its Content-Length, \(declared) bytes, is larger than", exchange.limit)
        } else if data.count > exchange.limit - exchange.body.count {
            exchange.refusal = Self.tooLarge(url, "its body, decompressed, is larger than", exchange.limit)
        } else {
            exchange.body.append(data)
        }
        let refused = exchange.refusal != nil
        // A refused exchange keeps nothing of what it read.
        if refused { exchange.body = Data() }
        exchanges[dataTask.taskIdentifier] = exchange
        lock.unlock()
        if refused { dataTask.cancel() }
    }

    func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: (any Error)?) {
        lock.lock()
        let exchange = exchanges.removeValue(forKey: task.taskIdentifier)
        lock.unlock()
        guard let exchange else { return }
        if let refusal = exchange.refusal { return exchange.finish(.failure(refusal)) }
        guard error == nil, let response = task.response as? HTTPURLResponse else {
            let reason = error.map { "\($0.localizedDescription)" } ?? "no HTTP response"
            let url = task.originalRequest?.url?.absoluteString ?? "?"
            return exchange.finish(.failure(CatalogClientError(code: .transport, message: "\(url): \(reason)")))
        }
        var headers: [String: String] = [:]
        for (name, value) in response.allHeaderFields {
            if let name = name as? String, let value = value as? String { headers[name] = value }
        }
        exchange.finish(.success(HTTPAnswer(status: response.statusCode, headers: headers, body: exchange.body)))
    }

    private static func tooLarge(_ url: String, _ what: String, _ limit: Int) -> CatalogClientError {
        CatalogClientError(
            code: .responseTooLarge,
            message: "\(url): \(what) the \(limit)-byte limit (Configuration.maximumResponseBytes); not read further")
    }
}

/// The data task of one request (a `send`, a content fetch), shared with its cancellation handler,
/// which may run on any thread.
final class TaskBox: @unchecked Sendable {
    // @unchecked: every access to `task` and `cancelled` holds `lock`.
    private let lock = NSLock()
    private var task: URLSessionDataTask?
    private var cancelled = false

    func set(_ task: URLSessionDataTask) {
        lock.lock()
        self.task = task
        let cancelNow = cancelled
        lock.unlock()
        if cancelNow { task.cancel() }
    }

    func cancel() {
        lock.lock()
        cancelled = true
        let task = self.task
        lock.unlock()
        task?.cancel()
    }
}
