import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// What one `GET` of a content file came to.
struct ContentFetch: Sendable {
    /// The HTTP status, when an answer came.
    var status: Int?
    /// The answer's headers.
    var headers: [String: String] = [:]
    /// The length of the partial file afterwards.
    var length: Int64
    /// The start of an error answer's body (for its `{"error":…}`), never written to the file.
    var errorBody = Data()
    /// Why the exchange stopped early: no answer, a connection cut mid-file, an answer that does not
    /// fit the file.
    var failure: CatalogClientError?

    func header(_ name: String) -> String? {
        headers.first { $0.key.caseInsensitiveCompare(name) == .orderedSame }?.value
    }
}

/// Downloads content files straight to disk, chunk by chunk as they arrive, so memory stays flat
/// whatever the file's size; a 206 is appended to the partial file, a 200 replaces it.
struct ContentTransfer: Sendable {
    private let session: URLSession
    private let writer = ChunkWriter()

    init(timeout: TimeInterval) {
        #if canImport(FoundationNetworking)
            // swift-corelibs-foundation truncates timeouts to whole seconds.
            let timeout = max(timeout.rounded(.up), 1)
        #endif
        let configuration = URLSessionConfiguration.ephemeral
        configuration.urlCache = nil
        configuration.requestCachePolicy = .reloadIgnoringLocalCacheData
        configuration.httpCookieStorage = nil
        configuration.httpShouldSetCookies = false
        // A stall fails after `timeout` without a byte; a large file may take as long as it needs.
        configuration.timeoutIntervalForRequest = timeout
        configuration.timeoutIntervalForResource = 7 * 24 * 3600
        session = URLSession(configuration: configuration, delegate: writer, delegateQueue: nil)
    }

    /// Fetches `url` into `file`, which holds `offset` bytes already (then asked for the rest with
    /// `Range` and `If-Range: entityTag`), never letting it grow past `size`. `progress` is told the
    /// file's length as it grows, at most every 64 KiB; `validator` the strong ETag of an answer
    /// whose bytes are being written, as soon as they start (so that a process killed mid-file
    /// still resumes with it).
    func fetch(
        _ url: URL, into file: URL, offset: Int64, size: Int64, entityTag: String,
        validator: @escaping @Sendable (String) -> Void, progress: @escaping @Sendable (Int64) -> Void
    ) async -> ContentFetch {
        var request = URLRequest(url: url)
        if offset > 0 {
            request.setValue("bytes=\(offset)-", forHTTPHeaderField: "Range")
            // A file whose bytes changed since the first part would be spliced from two versions:
            // If-Range gets the whole new one instead (RFC 9110 §13.1.5).
            request.setValue(entityTag, forHTTPHeaderField: "If-Range")
        }
        // Content is compressed already, and a byte range of a gzip encoding is not a range of the file.
        request.setValue("identity", forHTTPHeaderField: "Accept-Encoding")
        let box = TaskBox()
        let writer = self.writer
        return await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                let task = session.dataTask(with: request)
                writer.begin(task, file: file, offset: offset, size: size, validator: validator, progress: progress) {
                    continuation.resume(returning: $0)
                }
                box.set(task)
                task.resume()
            }
        } onCancel: {
            box.cancel()
        }
    }
}

/// The session's delegate: writes each task's body to its file as it arrives.
private final class ChunkWriter: NSObject, URLSessionDataDelegate, @unchecked Sendable {
    // @unchecked: `transfers` is only touched while holding `lock`; a transfer's handle only on the
    // session's serial delegate queue.
    private let lock = NSLock()
    private var transfers: [Int: Transfer] = [:]

    private final class Transfer {
        let file: URL
        let offset: Int64
        let size: Int64
        let validator: @Sendable (String) -> Void
        let progress: @Sendable (Int64) -> Void
        let finish: @Sendable (ContentFetch) -> Void
        var handle: FileHandle?
        var decided = false
        var writing = false
        /// The answer's ETag, read when its status is.
        var entityTag: String?
        var length: Int64
        var reported: Int64
        var errorBody = Data()
        var failure: CatalogClientError?

        init(
            file: URL, offset: Int64, size: Int64, validator: @escaping @Sendable (String) -> Void,
            progress: @escaping @Sendable (Int64) -> Void, finish: @escaping @Sendable (ContentFetch) -> Void
        ) {
            self.file = file
            self.offset = offset
            self.size = size
            self.validator = validator
            self.progress = progress
            self.finish = finish
            length = offset
            reported = offset
        }
    }

    func begin(
        _ task: URLSessionTask, file: URL, offset: Int64, size: Int64, validator: @escaping @Sendable (String) -> Void,
        progress: @escaping @Sendable (Int64) -> Void, finish: @escaping @Sendable (ContentFetch) -> Void
    ) {
        lock.lock()
        transfers[task.taskIdentifier] = Transfer(
            file: file, offset: offset, size: size, validator: validator, progress: progress, finish: finish)
        lock.unlock()
    }

    private func transfer(_ task: URLSessionTask) -> Transfer? {
        lock.lock()
        defer { lock.unlock() }
        return transfers[task.taskIdentifier]
    }

    func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive data: Data) {
        guard let transfer = transfer(dataTask), transfer.failure == nil else { return }
        if !transfer.decided {
            transfer.decided = true
            decide(transfer, response: dataTask.response as? HTTPURLResponse)
        }
        guard transfer.failure == nil else { return dataTask.cancel() }
        guard transfer.writing, let handle = transfer.handle else {
            // An error answer: its start is kept for the message, nothing is written.
            if transfer.errorBody.count < 16 * 1024 { transfer.errorBody.append(data.prefix(16 * 1024 - transfer.errorBody.count)) }
            return
        }
        guard Int64(data.count) <= transfer.size - transfer.length else {
            transfer.failure = CatalogClientError(
                code: .malformedResponse,
                message: "\(Self.name(dataTask)): more bytes than the \(transfer.size) the content list gives; not read further")
            return dataTask.cancel()
        }
        do {
            try handle.write(contentsOf: data)
        } catch {
            transfer.failure = CatalogClientError(code: .storage, message: "cannot write \(transfer.file.path): \(error)")
            return dataTask.cancel()
        }
        transfer.length += Int64(data.count)
        if transfer.length - transfer.reported >= 64 * 1024 || transfer.length == transfer.size {
            transfer.reported = transfer.length
            transfer.progress(transfer.length)
        }
    }

    /// On the first bytes of the body: a 206 that starts where the file ends is appended, a 200
    /// replaces the file, anything else is an error answer and is not written.
    private func decide(_ transfer: Transfer, response: HTTPURLResponse?) {
        guard let response else { return }
        transfer.entityTag = response.value(forHTTPHeaderField: "ETag")
        let name = response.url?.absoluteString ?? "?"
        switch response.statusCode {
        case 206:
            let range = response.value(forHTTPHeaderField: "Content-Range") ?? ""
            guard let first = Self.firstByte(range), first == transfer.offset, Self.completeLength(range) == transfer.size else {
                transfer.failure = CatalogClientError(
                    code: .malformedResponse,
                    message: "\(name): a 206 with Content-Range \(range.debugDescription), not bytes \(transfer.offset)-…/\(transfer.size)")
                return
            }
            open(transfer, truncatingTo: transfer.offset)
        case 200:
            if response.expectedContentLength > transfer.size {
                transfer.failure = CatalogClientError(
                    code: .malformedResponse,
                    message:
                        "\(name): Content-Length \(response.expectedContentLength), more than the \(transfer.size) bytes the list gives")
                return
            }
            // The server sent the whole file (no range support, or the file changed): start again.
            transfer.length = 0
            open(transfer, truncatingTo: 0)
        default:
            return
        }
    }

    private func open(_ transfer: Transfer, truncatingTo length: Int64) {
        do {
            if !FileManager.default.fileExists(atPath: transfer.file.path) {
                guard FileManager.default.createFile(atPath: transfer.file.path, contents: nil) else {
                    throw CatalogClientError(code: .storage, message: "cannot create \(transfer.file.path)")
                }
            }
            let handle = try FileHandle(forWritingTo: transfer.file)
            try handle.truncate(atOffset: UInt64(length))
            try handle.seekToEnd()
            transfer.handle = handle
            transfer.writing = true
            if let tag = transfer.entityTag, tag.hasPrefix("\"") { transfer.validator(tag) }
        } catch {
            transfer.failure = CatalogClientError(code: .storage, message: "cannot write \(transfer.file.path): \(error)")
        }
    }

    func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: (any Error)?) {
        lock.lock()
        let transfer = transfers.removeValue(forKey: task.taskIdentifier)
        lock.unlock()
        guard let transfer else { return }
        let response = task.response as? HTTPURLResponse
        // An answer with no body at all (a 403, a 416, an empty file) never reached `didReceive`.
        if !transfer.decided {
            transfer.decided = true
            decide(transfer, response: response)
        }
        if let handle = transfer.handle {
            // A complete file is flushed before it is verified and moved into place.
            if transfer.length == transfer.size { try? handle.synchronize() }
            try? handle.close()
        }
        if transfer.length != transfer.reported { transfer.progress(transfer.length) }
        var fetch = ContentFetch(status: response?.statusCode, length: transfer.length, errorBody: transfer.errorBody)
        for (name, value) in response?.allHeaderFields ?? [:] {
            if let name = name as? String, let value = value as? String { fetch.headers[name] = value }
        }
        if let failure = transfer.failure {
            fetch.failure = failure
        } else if let error {
            fetch.failure = CatalogClientError(code: .transport, message: "\(Self.name(task)): \(error.localizedDescription)")
        } else if response == nil {
            fetch.failure = CatalogClientError(code: .transport, message: "\(Self.name(task)): no HTTP response")
        } else if transfer.writing, transfer.length != transfer.size {
            // The connection closed early without an error the transport noticed.
            fetch.failure = CatalogClientError(
                code: .transport, message: "\(Self.name(task)): the answer ended at byte \(transfer.length) of \(transfer.size)")
        }
        transfer.finish(fetch)
    }

    private static func name(_ task: URLSessionTask) -> String {
        task.originalRequest?.url.map { "\($0.scheme ?? "")://\($0.host ?? "")\($0.path)" } ?? "?"
    }

    /// `first` in `bytes first-last/complete`.
    static func firstByte(_ contentRange: String) -> Int64? {
        guard contentRange.hasPrefix("bytes "), let dash = contentRange.firstIndex(of: "-") else { return nil }
        return Int64(contentRange[contentRange.index(contentRange.startIndex, offsetBy: 6)..<dash])
    }

    /// `complete` in `bytes first-last/complete`.
    static func completeLength(_ contentRange: String) -> Int64? {
        guard let slash = contentRange.lastIndex(of: "/") else { return nil }
        return Int64(contentRange[contentRange.index(after: slash)...])
    }
}
