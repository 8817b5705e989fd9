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

/// URLSession set up for a client that does its own HTTP caching.
struct HTTPTransport: Sendable {
    let session: URLSession

    init(timeout: TimeInterval) {
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
        session = URLSession(configuration: configuration)
    }

    /// Sends `request`; a failure to get any HTTP answer is a `.transport` error.
    func send(_ request: URLRequest) async -> Result<HTTPAnswer, CatalogClientError> {
        // The completion-handler API rather than `data(for:)`: available on every OS version the
        // library supports, and the same code path on Linux.
        let box = TaskBox()
        return await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                let task = session.dataTask(with: request) { data, response, error in
                    if let response = response as? HTTPURLResponse {
                        var headers: [String: String] = [:]
                        for (name, value) in response.allHeaderFields {
                            if let name = name as? String, let value = value as? String { headers[name] = value }
                        }
                        continuation.resume(
                            returning: .success(HTTPAnswer(status: response.statusCode, headers: headers, body: data ?? Data())))
                    } else {
                        let reason = error.map { "\($0.localizedDescription)" } ?? "no HTTP response"
                        continuation.resume(
                            returning: .failure(
                                CatalogClientError(code: .transport, message: "\(request.url?.absoluteString ?? "?"): \(reason)")))
                    }
                }
                box.set(task)
                task.resume()
            }
        } onCancel: {
            box.cancel()
        }
    }
}

/// The data task of one `send`, shared with its cancellation handler, which may run on any thread.
private final class TaskBox: @unchecked Sendable {
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
