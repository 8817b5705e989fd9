import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Downloads the content a customer bought: asks the server what they may download, fetches the
/// files with progress, pause, resume and cancel, resumes by range after an interruption or a
/// relaunch, and hands over nothing whose SHA-256 does not match (<doc:DeliverPurchasedContent>).
///
/// ```swift
/// let downloads = ContentDownloadManager(configuration: catalog.configuration)
/// for item in try await downloads.available() { await downloads.download(item) }
/// for await status in await downloads.updates() {
///     print(status.item, status.state, status.fractionCompleted, status.estimatedTimeRemaining ?? 0)
/// }
/// ```
///
/// Files go to Caches, left out of backups, unless ``ContentLocation`` says otherwise. One manager
/// per folder: two managers writing the same partial files would spoil each other's downloads.
public actor ContentDownloadManager {
    /// The client's configuration: where the server is, how patient to be.
    public nonisolated let configuration: CatalogClient.Configuration
    /// How many items download at once; the others wait.
    public nonisolated let maximumConcurrentDownloads: Int
    /// Attempts per file (the first included) after failures without an answer, cut connections,
    /// 5xx and 429, before the download fails. A failed download keeps its bytes:
    /// ``resume(_:)`` continues it.
    public nonisolated let attemptsPerFile: Int
    /// The folder the manager keeps its files in (see ``ContentLocation``).
    public nonisolated var directory: URL { folder.root }

    let folder: ContentFolder
    private let transfer: ContentTransfer
    private let transport: HTTPTransport
    private let evidence: ContentEvidence
    private var jobs: [String: Job] = [:]
    /// Items waiting for a slot, first come first served.
    private var queue: [String] = []
    private var observers: [UUID: AsyncStream<ContentDownloadStatus>.Continuation] = [:]
    private var waiters: [String: [CheckedContinuation<ContentDownloadStatus, Never>]] = [:]
    private var prepared = false

    private struct Job {
        var content: DownloadableContent
        var status: ContentDownloadStatus
        var task: Task<Void, Never>?
        /// Bumped whenever the running task is superseded (pause, cancel, a new version): a task
        /// of an older generation changes nothing.
        var generation = 0
        /// The strong ETag each file (by digest) was served with, for `If-Range`.
        var entityTags: [String: String] = [:]
        /// Where this session's rate is counted from, for the estimate of time remaining.
        var rateStart: (at: Date, bytes: Int64)?
    }

    /// A download in progress as kept on disk (`jobs/<item>.json`), so the next launch resumes it.
    private struct StoredJob: Codable {
        var item: String
        var version: Int
        var files: [StoredFile]
        var paused: Bool
        var entityTags: [String: String]
    }

    private struct StoredFile: Codable {
        var path: String
        var size: Int64
        var sha256: String
        var url: URL
        var expires: Date
    }

    /// The server reused `url` after the list changed the item's version: start the item again.
    private struct VersionChanged: Error {}

    /// A download manager keeping its files at `location`.
    ///
    /// Downloads an earlier process left unfinished are listed again: paused if they were paused
    /// or had failed, otherwise waiting, and started at once when `resumesInterruptedDownloads`.
    ///
    /// - Parameters:
    ///   - configuration: The client's: the server, the app, the directories, the timeouts.
    ///   - location: Where the files go: Caches by default, out of backups.
    ///   - evidence: What is shown to the server when asking for the list: by default what it
    ///     accepted on this install, sent purchases and restored ones alike.
    ///   - maximumConcurrentDownloads: Items downloading at once (at least 1).
    ///   - attemptsPerFile: See ``attemptsPerFile``.
    ///   - resumesInterruptedDownloads: Start the downloads the last process left running.
    public init(
        configuration: CatalogClient.Configuration, location: ContentLocation = .caches,
        evidence: ContentEvidence = .lastAcceptedPurchase, maximumConcurrentDownloads: Int = 2, attemptsPerFile: Int = 5,
        resumesInterruptedDownloads: Bool = true
    ) {
        self.configuration = configuration
        self.maximumConcurrentDownloads = max(maximumConcurrentDownloads, 1)
        self.attemptsPerFile = max(attemptsPerFile, 1)
        self.evidence = evidence
        folder = ContentFolder(configuration: configuration, location: location)
        transfer = ContentTransfer(timeout: configuration.requestTimeout)
        transport = HTTPTransport(timeout: configuration.requestTimeout, maximumResponseBytes: configuration.maximumResponseBytes)
        var restored: [String: Job] = [:]
        var waiting: [String] = []
        for stored in Self.storedJobs(in: folder) {
            let content = DownloadableContent(
                item: stored.item, version: stored.version,
                files: stored.files.map { .init(path: $0.path, size: $0.size, sha256: $0.sha256, url: $0.url, expires: $0.expires) })
            let paused = stored.paused || !resumesInterruptedDownloads
            var job = Job(
                content: content,
                status: ContentDownloadStatus(
                    item: content.item, version: content.version, state: paused ? .paused : .waiting, bytesWritten: 0,
                    bytesExpected: content.size))
            job.entityTags = stored.entityTags
            job.status.bytesWritten = Self.bytesOnDisk(content, folder: folder)
            restored[content.item] = job
            if !paused { waiting.append(content.item) }
        }
        jobs = restored
        queue = waiting.sorted()
        if !queue.isEmpty { Task { await self.pump() } }
    }

    // MARK: - Asking

    /// Asks the server what the customer may download now: `POST v1/apps/<app>/content` on
    /// ``CatalogClient/Configuration/reportServer`` (or ``CatalogClient/Configuration/server``)
    /// with the manager's ``ContentEvidence``.
    ///
    /// With ``ContentEvidence/lastAcceptedPurchase`` and several customers kept (a restore of
    /// purchases made without an app account token), each customer's purchase is shown and the lists
    /// are joined, an item at its highest version. One that the server refuses for good is left out
    /// (it proves nothing); a failure worth trying again fails the whole list, since a list missing
    /// a customer's items would end their downloads.
    ///
    /// - Throws: ``CatalogClientError/Code-swift.struct/rejected`` when there is no evidence to
    ///   show or the server refuses it (``CatalogClientError/serverCode`` says why;
    ///   ``CatalogClientError/Code-swift.struct/boundToAnotherCustomer`` for a purchase another
    ///   account holds); ``CatalogClientError/Code-swift.struct/malformedResponse`` for a list that
    ///   is not one, or names a path that would leave the item's folder; `transport` or `server`
    ///   otherwise.
    public func available() async throws(CatalogClientError) -> [DownloadableContent] {
        let bodies: [Data]
        switch evidence.kind {
        case .body(let data): bodies = [data]
        case .lastAcceptedPurchase:
            bodies = PurchaseOutbox.keptEvidence(configuration)
            guard !bodies.isEmpty else {
                throw CatalogClientError(
                    code: .rejected,
                    message:
                        "no purchase was accepted on this install yet: send one (sendPurchase), restore them (restorePurchases) or give the evidence (ContentEvidence.transaction)"
                )
            }
        }
        var lists: [[DownloadableContent]] = []
        var refusal: CatalogClientError?
        for body in bodies {
            switch await list(presenting: body) {
            case .success(let list): lists.append(list)
            case .failure(let error) where error.isRetryable: throw error
            case .failure(let error): refusal = refusal ?? error
            }
        }
        if lists.isEmpty, let refusal { throw refusal }
        return Self.joined(lists)
    }

    /// The lists of several customers as one: each item once, at the highest version listed.
    private static func joined(_ lists: [[DownloadableContent]]) -> [DownloadableContent] {
        guard lists.count > 1 else { return lists.first ?? [] }
        var items: [DownloadableContent] = []
        for content in lists.joined() {
            if let index = items.firstIndex(where: { $0.item == content.item }) {
                if content.version > items[index].version { items[index] = content }
            } else {
                items.append(content)
            }
        }
        return items
    }

    /// The list one body of evidence gets.
    private func list(presenting body: Data) async -> Result<[DownloadableContent], CatalogClientError> {
        var request = URLRequest(url: configuration.contentListURL)
        request.httpMethod = "POST"
        request.setValue("application/json", forHTTPHeaderField: "Content-Type")
        request.httpBody = body
        let answer: HTTPAnswer
        switch await transport.send(request) {
        case .failure(let error): return .failure(error)
        case .success(let received): answer = received
        }
        guard answer.status == 200 else { return .failure(CatalogClient.unexpected(answer)) }
        return Result { () throws(CatalogClientError) in
            try ContentListWire.decode(answer.body, base: configuration.contentBaseURL, from: configuration.contentListURL)
        }
    }

    // MARK: - Downloading

    /// Queues `content` for download and returns at once; ``updates()`` and ``status(of:)`` say how
    /// it goes, ``waitForDownload(_:)`` waits for the end.
    ///
    /// The version already on disk is finished at once. A download of the same version under way
    /// takes the fresh URLs; a paused or failed one resumes; one of another version is replaced
    /// (files with the same digest are not downloaded again).
    @discardableResult
    public func download(_ content: DownloadableContent) -> ContentDownloadStatus {
        let id = content.item
        if var job = jobs[id], job.content.version == content.version, job.status.state == .waiting || job.status.state == .active {
            job.content = content
            jobs[id] = job
            persist(id)
            return job.status
        }
        stopTask(id)
        if let done = folder.downloaded(id), done.version == content.version {
            var status = ContentDownloadStatus(
                item: id, version: content.version, state: .finished, bytesWritten: content.size, bytesExpected: content.size)
            status.location = done.location
            jobs[id] = Job(content: content, status: status, task: jobs[id]?.task, generation: (jobs[id]?.generation ?? 0) + 1)
            try? FileManager.default.removeItem(at: folder.job(id))
            publish(id)
            return status
        }
        let entityTags = jobs[id]?.entityTags ?? [:]
        let previous = jobs[id]?.task
        var job = Job(
            content: content,
            status: ContentDownloadStatus(
                item: id, version: content.version, state: .waiting, bytesWritten: Self.bytesOnDisk(content, folder: folder),
                bytesExpected: content.size))
        job.entityTags = entityTags
        job.task = previous
        job.generation = (jobs[id]?.generation ?? 0) + 1
        jobs[id] = job
        enqueue(id)
        return job.status
    }

    /// Asks for the list and downloads `item` from it.
    ///
    /// - Throws: What ``available()`` throws; ``CatalogClientError/Code-swift.struct/rejected``
    ///   when the list does not name the item (the customer may not download it).
    @discardableResult
    public func download(item: String) async throws(CatalogClientError) -> ContentDownloadStatus {
        guard let content = try await available().first(where: { $0.item == item }) else {
            throw CatalogClientError(code: .rejected, message: "the server does not list \(item) for this customer")
        }
        return download(content)
    }

    /// Stops a waiting or active download, keeping what it received; ``resume(_:)`` continues it,
    /// in this process or the next.
    public func pause(_ item: String) {
        guard let state = jobs[item]?.status.state, state == .waiting || state == .active else { return }
        stopTask(item)
        jobs[item]?.status.state = .paused
        jobs[item]?.status.estimatedTimeRemaining = nil
        persist(item)
        publish(item)
        pump()
    }

    /// Queues a paused or failed download again; it continues from the bytes it has.
    public func resume(_ item: String) {
        guard let state = jobs[item]?.status.state, state == .paused || state == .failed else { return }
        jobs[item]?.status.error = nil
        enqueue(item)
    }

    /// Stops a download and removes its partial files; a version finished earlier stays.
    public func cancel(_ item: String) {
        guard let job = jobs[item], !job.status.isDone || job.status.state == .failed else { return }
        stopTask(item)
        removePartials(of: job.content)
        jobs[item]?.status.state = .cancelled
        jobs[item]?.status.bytesWritten = 0
        jobs[item]?.status.estimatedTimeRemaining = nil
        publish(item)
        pump()
    }

    /// Cancels any download of `item` and removes its files from disk.
    public func remove(_ item: String) {
        if let job = jobs[item] {
            stopTask(item)
            removePartials(of: job.content)
            jobs[item] = nil
        }
        folder.remove(item)
    }

    // MARK: - Watching

    /// Where the download of `item` stands, if this manager knows of one.
    public func status(of item: String) -> ContentDownloadStatus? { jobs[item]?.status }

    /// Every download this manager knows of, by item id.
    public func statuses() -> [ContentDownloadStatus] { jobs.keys.sorted().compactMap { jobs[$0]?.status } }

    /// Every change of every download from now on: states, and progress at least every 64 KiB.
    /// A slow reader misses intermediate progress, never the last status.
    public func updates() -> AsyncStream<ContentDownloadStatus> {
        let key = UUID()
        let (stream, continuation) = AsyncStream.makeStream(of: ContentDownloadStatus.self, bufferingPolicy: .bufferingNewest(256))
        observers[key] = continuation
        continuation.onTermination = { _ in Task { await self.stopObserving(key) } }
        return stream
    }

    private func stopObserving(_ key: UUID) { observers[key] = nil }

    /// Waits until the download of `item` is no longer waiting or active (finished, failed,
    /// cancelled or paused), and returns its status; nil if there is no download of it.
    public func waitForDownload(_ item: String) async -> ContentDownloadStatus? {
        guard let status = jobs[item]?.status else { return nil }
        guard status.state == .waiting || status.state == .active else { return status }
        return await withCheckedContinuation { waiters[item, default: []].append($0) }
    }

    // MARK: - What is on disk

    /// The items whose files are all on disk and verified: no request.
    public func downloaded() -> [DownloadedContent] { folder.allDownloaded() }

    /// The folder of `item`'s verified files, if it is downloaded.
    public func location(of item: String) -> URL? { folder.downloaded(item)?.location }

    /// What is downloaded compared with `list`: each item on disk or listed, with both versions.
    public func inventory(comparedWith list: [DownloadableContent]) -> [ContentInventoryEntry] {
        let kept = Dictionary(folder.allDownloaded().map { ($0.item, $0) }, uniquingKeysWith: { first, _ in first })
        let listed = Dictionary(list.map { ($0.item, $0.version) }, uniquingKeysWith: max)
        return Set(kept.keys).union(listed.keys).sorted().map { item in
            ContentInventoryEntry(
                item: item, downloadedVersion: kept[item]?.version, availableVersion: listed[item], location: kept[item]?.location)
        }
    }

    /// Asks the server for the list (``available()``) and compares it with what is downloaded:
    /// ``ContentInventoryEntry/newerVersionAvailable`` says which items to download again.
    public func inventory() async throws(CatalogClientError) -> [ContentInventoryEntry] {
        inventory(comparedWith: try await available())
    }

    // MARK: - Running

    private func enqueue(_ item: String) {
        jobs[item]?.status.state = .waiting
        queue.removeAll { $0 == item }
        queue.append(item)
        persist(item)
        publish(item)
        pump()
    }

    /// Starts waiting downloads while fewer than the maximum run.
    private func pump() {
        var running = jobs.values.filter { $0.status.state == .active }.count
        while running < maximumConcurrentDownloads, !queue.isEmpty {
            let item = queue.removeFirst()
            guard var job = jobs[item], job.status.state == .waiting else { continue }
            job.generation += 1
            job.status.state = .active
            job.rateStart = (Date(), job.status.bytesWritten)
            let generation = job.generation
            // A stopped task may still be writing its last chunk to the partial file: the next one
            // starts once it has returned, so two never write one file.
            let previous = job.task
            job.task = Task {
                await previous?.value
                await self.run(item, generation: generation)
            }
            jobs[item] = job
            running += 1
            publish(item)
        }
    }

    /// Cancels the item's task; it is kept, so that the next one waits for it to return.
    private func stopTask(_ item: String) {
        jobs[item]?.task?.cancel()
        jobs[item]?.generation += 1
        queue.removeAll { $0 == item }
    }

    private func isCurrent(_ item: String, _ generation: Int) -> Bool { jobs[item]?.generation == generation }

    /// Throws when the task was superseded: a pause or a cancel already set the state.
    private func check(_ item: String, _ generation: Int) throws {
        if Task.isCancelled || !isCurrent(item, generation) { throw CancellationError() }
    }

    private func run(_ item: String, generation: Int) async {
        do {
            if !prepared {
                try folder.prepare()
                prepared = true
            }
            var index = 0
            let progress = LatestBytes()
            while let content = jobs[item]?.content, index < content.files.count {
                try check(item, generation)
                do {
                    try await place(content, index, generation: generation, progress: progress)
                    index += 1
                } catch is VersionChanged {
                    index = 0
                }
            }
            try check(item, generation)
            guard let content = jobs[item]?.content else { return }
            try folder.commit(content)
            try? FileManager.default.removeItem(at: folder.job(item))
            try? FileManager.default.removeItem(at: folder.partialFolder(item))
            jobs[item]?.status.location = folder.versionFolder(item, version: content.version)
            settle(item, .finished, bytes: content.size, error: nil)
        } catch {
            guard isCurrent(item, generation), !(error is CancellationError) else { return }
            let failure =
                error as? CatalogClientError ?? CatalogClientError(code: .storage, message: "\(item): \(error)")
            configuration.log("content \(item) not downloaded: \(failure)")
            // Kept paused: the next launch lists it without starting it again by itself.
            persist(item, paused: true)
            settle(item, .failed, bytes: jobs[item].map { Self.bytesOnDisk($0.content, folder: folder) } ?? 0, error: failure)
        }
    }

    private func settle(_ item: String, _ state: ContentDownloadState, bytes: Int64, error: CatalogClientError?) {
        jobs[item]?.task = nil
        jobs[item]?.status.state = state
        jobs[item]?.status.bytesWritten = bytes
        jobs[item]?.status.error = error
        jobs[item]?.status.estimatedTimeRemaining = nil
        publish(item)
        pump()
    }

    /// Puts file `index` of `content` in the item's version folder: already there, copied from the
    /// version on disk when its digest is the same, or downloaded; in every case verified first.
    private func place(_ content: DownloadableContent, _ index: Int, generation: Int, progress: LatestBytes) async throws {
        let file = content.files[index]
        guard ContentFolder.validDigest(file.sha256) else {
            throw CatalogClientError(code: .malformedResponse, message: "\(content.item): \(file.sha256.debugDescription) is not a SHA-256")
        }
        let target = try ContentFolder.join(folder.versionFolder(content.item, version: content.version), file.path)
        // Files are moved into the folder only once verified.
        if ContentFolder.size(of: target) == file.size { return }
        let partial = folder.partial(content.item, file.sha256)
        try DurableFile.makeDirectory(folder.partialFolder(content.item))
        if ContentFolder.size(of: partial) != file.size, let kept = reusableCopy(of: file, item: content.item) {
            try? FileManager.default.removeItem(at: partial)
            try? FileManager.default.copyItem(at: kept, to: partial)
        }
        try await fetch(content.item, index, generation: generation, progress: progress)
        try check(content.item, generation)
        guard try ContentFolder.sha256(of: partial) == file.sha256 else {
            try? FileManager.default.removeItem(at: partial)
            throw CatalogClientError(
                code: .digestMismatch,
                message:
                    "\(content.item): \(file.path) does not match its SHA-256 \(file.sha256); its \(file.size) bytes were deleted, not handed over"
            )
        }
        do {
            try DurableFile.makeDirectory(target.deletingLastPathComponent())
            try? FileManager.default.removeItem(at: target)
            try FileManager.default.moveItem(at: partial, to: target)
        } catch {
            throw CatalogClientError(code: .storage, message: "cannot move \(file.path) into \(target.path): \(error)")
        }
    }

    /// The file with the same digest and size in the version of the item on disk, if any.
    private func reusableCopy(of file: DownloadableContent.File, item: String) -> URL? {
        guard let kept = folder.downloaded(item), let same = kept.files.first(where: { $0.sha256 == file.sha256 && $0.size == file.size })
        else { return nil }
        return try? ContentFolder.join(kept.location, same.path)
    }

    /// Fetches file `index` of `item` into its partial file until it holds the whole file: by range
    /// from what it has, again after a cut connection or a 5xx, with a fresh list when the signed
    /// URL expired or is refused.
    private func fetch(_ item: String, _ index: Int, generation: Int, progress: LatestBytes) async throws {
        var failures = 0
        var refreshed = false
        while true {
            try check(item, generation)
            guard let content = jobs[item]?.content, index < content.files.count else { throw CancellationError() }
            let file = content.files[index]
            // A URL about to expire is replaced before it is refused.
            if file.expires.timeIntervalSinceNow < 5, !refreshed {
                refreshed = true
                try await refresh(item, version: content.version)
                continue
            }
            let partial = folder.partial(item, file.sha256)
            var have = ContentFolder.size(of: partial) ?? 0
            if have > file.size {
                try? FileManager.default.removeItem(at: partial)
                have = 0
            }
            if have == file.size, file.size > 0 || FileManager.default.fileExists(atPath: partial.path) { return }
            try DurableFile.makeDirectory(folder.partialFolder(item))
            if file.size == 0 {
                guard FileManager.default.createFile(atPath: partial.path, contents: nil) else {
                    throw CatalogClientError(code: .storage, message: "cannot create \(partial.path)")
                }
                return
            }
            let before = content.files[..<index].reduce(Int64(0)) { $0 + $1.size }
            let result = await transfer.fetch(
                file.url, into: partial, offset: have, size: file.size,
                entityTag: jobs[item]?.entityTags[file.sha256] ?? "\"\(file.sha256)\"",
                validator: { tag in Task { await self.remember(tag, of: file.sha256, item: item) } }
            ) { length in
                // Tasks may run in any order: each publishes the latest count, so progress never goes back.
                progress.set(before + length)
                Task { await self.progress(item, generation: generation, bytes: progress.value) }
            }
            try check(item, generation)
            let error: CatalogClientError
            switch result.status {
            case 200?, 206?:
                guard let failure = result.failure else { return }
                guard failure.isRetryable else {
                    // An answer that does not fit the file leaves nothing worth resuming from.
                    if failure.code == .malformedResponse { try? FileManager.default.removeItem(at: partial) }
                    throw failure
                }
                error = failure
            case let status? where [403, 404, 410].contains(status) && !refreshed:
                // An expired or rotated-out signature, or a blob moved: the list gives a new URL.
                refreshed = true
                try await refresh(item, version: content.version)
                continue
            case 416?:
                // The partial file is no prefix the server can continue: start it again.
                try? FileManager.default.removeItem(at: partial)
                error = CatalogClientError(code: .server, message: "\(item): \(file.path) answered 416 to a resume", status: 416)
            case let status?:
                let failure = CatalogClient.unexpected(HTTPAnswer(status: status, headers: result.headers, body: result.errorBody))
                guard failure.isRetryable else { throw failure }
                error = failure
            case nil:
                error = result.failure ?? CatalogClientError(code: .transport, message: "\(item): no answer")
                guard error.isRetryable else { throw error }
            }
            failures += 1
            guard failures < attemptsPerFile else { throw error }
            let wait = min(error.retryAfter ?? configuration.fetchBackoff.delay(retry: failures - 1), 60)
            try await Task.sleep(nanoseconds: UInt64(wait * 1_000_000_000))
        }
    }

    /// Asks for the list again for fresh URLs. The same version continues; another version replaces
    /// the download (``VersionChanged``); an item no longer listed fails it.
    private func refresh(_ item: String, version: Int) async throws {
        let list = try await available()
        guard let fresh = list.first(where: { $0.item == item }) else {
            throw CatalogClientError(
                code: .rejected,
                message: "the server no longer lists \(item) for this customer (a refund, or a subscription that did not cover it)")
        }
        jobs[item]?.content = fresh
        jobs[item]?.status.version = fresh.version
        jobs[item]?.status.bytesExpected = fresh.size
        persist(item)
        if fresh.version != version { throw VersionChanged() }
    }

    /// Keeps the strong ETag a file's bytes are being written with, on disk at once: a resume
    /// after a pause, a cut or a kill sends it in `If-Range`.
    private func remember(_ entityTag: String, of sha256: String, item: String) {
        // A download that finished or was cancelled meanwhile has no record to keep it in.
        guard let state = jobs[item]?.status.state, state != .finished, state != .cancelled,
            jobs[item]?.entityTags[sha256] != entityTag
        else { return }
        jobs[item]?.entityTags[sha256] = entityTag
        persist(item)
    }

    private func progress(_ item: String, generation: Int, bytes: Int64) {
        guard isCurrent(item, generation), var job = jobs[item], job.status.state == .active else { return }
        job.status.bytesWritten = bytes
        if let start = job.rateStart {
            let elapsed = Date().timeIntervalSince(start.at)
            let gained = bytes - start.bytes
            job.status.estimatedTimeRemaining =
                elapsed > 0 && gained > 0 ? Double(max(job.status.bytesExpected - bytes, 0)) * elapsed / Double(gained) : nil
        }
        jobs[item] = job
        publish(item)
    }

    private func publish(_ item: String) {
        guard let status = jobs[item]?.status else { return }
        for observer in observers.values { observer.yield(status) }
        if status.state != .waiting && status.state != .active, let waiting = waiters.removeValue(forKey: item) {
            for waiter in waiting { waiter.resume(returning: status) }
        }
    }

    // MARK: - Files

    private func removePartials(of content: DownloadableContent) {
        try? FileManager.default.removeItem(at: folder.partialFolder(content.item))
        if folder.downloaded(content.item)?.version != content.version {
            try? FileManager.default.removeItem(at: folder.versionFolder(content.item, version: content.version))
        }
        try? FileManager.default.removeItem(at: folder.job(content.item))
    }

    /// Keeps the download on disk for the next launch.
    private func persist(_ item: String, paused: Bool? = nil) {
        guard let job = jobs[item] else { return }
        let stored = StoredJob(
            item: item, version: job.content.version,
            files: job.content.files.map { .init(path: $0.path, size: $0.size, sha256: $0.sha256, url: $0.url, expires: $0.expires) },
            paused: paused ?? (job.status.state == .paused || job.status.state == .failed), entityTags: job.entityTags)
        do {
            try DurableFile.makeDirectory(folder.jobs)
            try DurableFile.write(try JSONEncoder().encode(stored), to: folder.job(item))
        } catch {
            configuration.log("content download of \(item) not kept for the next launch: \(error)")
        }
    }

    private static func storedJobs(in folder: ContentFolder) -> [StoredJob] {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: folder.jobs.path)) ?? []
        return names.filter { $0.hasSuffix(".json") && !$0.hasPrefix(DurableFile.temporaryPrefix) }.compactMap { name in
            guard let data = try? Data(contentsOf: folder.jobs.appendingPathComponent(name)) else { return nil }
            return try? JSONDecoder().decode(StoredJob.self, from: data)
        }
    }

    /// Bytes of `content` on disk: verified files, and partial ones.
    private static func bytesOnDisk(_ content: DownloadableContent, folder: ContentFolder) -> Int64 {
        let version = folder.versionFolder(content.item, version: content.version)
        return content.files.reduce(0) { total, file in
            if let target = try? ContentFolder.join(version, file.path), ContentFolder.size(of: target) == file.size {
                return total + file.size
            }
            guard ContentFolder.validDigest(file.sha256) else { return total }
            return total + min(ContentFolder.size(of: folder.partial(content.item, file.sha256)) ?? 0, file.size)
        }
    }
}

/// The byte count a download reached, set on the transfer's queue and read by the tasks that publish it.
private final class LatestBytes: @unchecked Sendable {
    // @unchecked: `bytes` is only touched while holding `lock`.
    private let lock = NSLock()
    private var bytes: Int64 = 0

    func set(_ value: Int64) {
        lock.lock()
        bytes = value
        lock.unlock()
    }

    var value: Int64 {
        lock.lock()
        defer { lock.unlock() }
        return bytes
    }
}

/// The answer of `POST v1/apps/<app>/content`: `{"items":[{"item","version","files":[{"path",
/// "size","sha256","url","expires"}]}]}` (docs/content.md).
enum ContentListWire {
    private struct List: Decodable { var items: [Item] }
    private struct Item: Decodable {
        var item: String
        var version: Int
        var files: [File]
    }
    private struct File: Decodable {
        var path: String
        var size: Int64
        var sha256: String
        var url: String
        var expires: Int64
    }

    /// The list in `body`, each URL resolved against `base`; every path and digest checked.
    static func decode(_ body: Data, base: URL, from source: URL) throws(CatalogClientError) -> [DownloadableContent] {
        let list: List
        do { list = try JSONDecoder().decode(List.self, from: body) } catch {
            throw CatalogClientError(
                code: .malformedResponse, message: "\(source.absoluteString): not a content list: \(error)", status: 200)
        }
        var items: [DownloadableContent] = []
        for item in list.items {
            var files: [DownloadableContent.File] = []
            for file in item.files {
                // Checked now, so that a hostile list fails at once rather than mid-download.
                _ = try ContentFolder.join(URL(fileURLWithPath: "/item"), file.path)
                guard ContentFolder.validDigest(file.sha256), file.size >= 0, let url = resolve(file.url, base: base) else {
                    throw CatalogClientError(
                        code: .malformedResponse,
                        message: "\(source.absoluteString): \(item.item)'s file \(file.path) has a bad digest, size or URL", status: 200)
                }
                files.append(
                    .init(
                        path: file.path, size: file.size, sha256: file.sha256, url: url,
                        expires: Date(timeIntervalSince1970: Double(file.expires))))
            }
            items.append(DownloadableContent(item: item.item, version: item.version, files: files))
        }
        return items
    }

    /// An absolute http(s) URL as it is; a path (`/v1/content/…?…`) after `base`, whose own path is
    /// kept as a prefix (a server behind a proxy at `https://example.com/catalog/`).
    static func resolve(_ text: String, base: URL) -> URL? {
        if text.hasPrefix("/") {
            var prefix = base.absoluteString
            while prefix.hasSuffix("/") { prefix.removeLast() }
            return URL(string: prefix + text)
        }
        guard let url = URL(string: text), let scheme = url.scheme?.lowercased(), scheme == "https" || scheme == "http", url.host != nil
        else { return nil }
        return url
    }
}
