import NIOCore

/// What one connection of ``LeanConnectionHandler`` is doing, and what it must do next: the
/// deadlines, backpressure and request order of the lean path, decided without a channel.
///
/// The handler tells it every event (bytes received, a read batch ended, the socket's writability
/// changed, the decoder began or ended a request, a passed-on request was answered, the timer
/// fired, the connection ended) with the moment it happened, and does what it answers: pass bytes
/// on, answer a feed, flush, read, schedule the timer, close. Nothing here touches NIO's
/// pipeline, so every rule can be tested with plain values (and the handler with an
/// `EmbeddedChannel` and its virtual clock).
///
/// The rules it keeps:
/// - **Order.** A request this connection delimited and passed on must be answered before any
///   request after it: feeds are answered here only while every passed-on request is answered.
///   Once something is handed over that cannot be delimited here (a body, an upgrade, bytes the
///   parser does not read, a request the decoder refused), every later byte goes to the decoder.
/// - **Backpressure.** While the socket is not writable, received requests wait unanswered and
///   no read is issued; both resume when it drains.
/// - **One download at a time.** While a content file is being sent, the requests after it wait
///   unread and unanswered, and no read is issued, so a connection holds at most one file open
///   and one read's worth of request bytes. The download's time counts by progress: only the
///   client's not draining the socket for `readDeadline` closes it, however large the file.
/// - **Deadlines by what the connection is doing.** A request must be read whole within
///   `readDeadline` of its first byte; a connection with nothing in progress and nothing
///   unanswered closes after `idleTimeout`; a client that has not drained its answers for
///   `readDeadline` is closed. The application's own time (a request read and not yet
///   answered) is never the client's.
struct LeanConnectionStateMachine {
    let readDeadline: TimeAmount
    let idleTimeout: TimeAmount

    /// When the first byte of the request being read arrived; nil between requests.
    private var requestStartedAt: NIODeadline?
    /// When the last exchange ended (or the connection opened): the idle clock's start.
    private var idleSince: NIODeadline
    /// Since when the socket has not been writable; nil while it is.
    private var writeStalledSince: NIODeadline?
    /// When this read batch's first bytes arrived, for the feed answer-time histogram.
    private var batchStartedAt: NIODeadline?

    /// Requests delimited here and passed on, and the responses to passed-on requests written so
    /// far: feeds are answered here only when the two agree, so nothing written here can
    /// overtake an earlier request's response.
    private var forwardedRequests = 0
    private var forwardedResponses = 0
    /// Requests the decoder has read whole; more of them than responses is the application's time.
    private var decodedRequests = 0
    /// The decoder is inside a request (its head read, its end not yet).
    private var decoderInRequest = false
    /// Something was handed over that cannot be delimited here: the decoder reads every byte.
    private var handedOver = false

    /// Bytes received and not yet consumed: the start of a request whose header block has not all
    /// arrived, or requests waiting for the socket to drain.
    private var unread: ByteBuffer?
    /// Requests wait in `unread` until the socket is writable again.
    private var paused = false
    /// A read was asked for while the socket was not writable; issued when it drains.
    private var readHeld = false
    /// A feed was answered in this batch and not yet flushed.
    private var wroteSinceFlush = false
    /// Whether anything was passed on in this read batch: if not, the decoder and the
    /// application's async channel are not told that a batch ended, which would only wake its
    /// task for nothing.
    private var forwardedSinceReadComplete = false
    /// When the scheduled timer fires; nil while none is scheduled.
    private var timerDeadline: NIODeadline?
    /// The connection ended: nothing more is timed.
    private var ended = false
    /// A content file is being sent: nothing else is answered or read until it is all written.
    private var downloading = false
    /// An inbound event (the input closed) arrived during a download: passed on after it.
    private var eventHeld = false

    init(readDeadline: TimeAmount, idleTimeout: TimeAmount, now: NIODeadline) {
        self.readDeadline = readDeadline
        self.idleTimeout = idleTimeout
        self.idleSince = now
    }

    // MARK: Actions

    /// What to do with the connection's timer.
    enum TimerAction: Equatable {
        /// The timer already fires in time, or nothing is timed.
        case keep
        /// Cancel the scheduled timer, if any, and schedule one for this moment.
        case schedule(NIODeadline)
    }

    /// The next thing to do with received bytes.
    enum InboundAction {
        /// A request for a feed that may be answered here: answer it and report
        /// ``answeredHere()``, or pass its bytes on and report ``passedOn()``.
        case answer(FeedRequest, bytes: ByteBuffer)
        /// A request for a content file: answer it here, then report ``answeredHere()`` and, if its
        /// body is still being sent, ``downloadStarted()``.
        case content(ContentRequest, bytes: ByteBuffer)
        /// Pass these bytes on to the decoder.
        case forward(ByteBuffer)
        /// Nothing more to do with what was received for now; then this for the timer.
        case done(TimerAction)
    }

    /// What to do when a read batch ends (``readComplete()``) or requests held back have been
    /// answered (``writableAgain``).
    struct BatchEnd: Equatable {
        /// Flush what was answered here.
        var flush: Bool
        /// When the answered batch's first bytes arrived, for its answer time; nil if the batch was
        /// received before the socket filled (its time is not the server's alone).
        var batchStartedAt: NIODeadline?
        /// Tell the handlers behind that their read batch ended.
        var fireReadComplete: Bool
        /// Ask for the next bytes from here (through ``readRequested(isWritable:)``).
        var read: Bool
    }

    /// What a change of the socket's writability asks for.
    enum WritabilityAction: Equatable {
        /// The socket drained: if `resume`, answer what was held back (``nextAction(isWritable:now:)``
        /// until done, then ``writableAgain()``); then ``releaseHeldRead(isWritable:)``.
        case drained(resume: Bool)
        /// The socket is full: the client has `readDeadline` to start reading.
        case stalled(TimerAction)
    }

    /// What the timer's firing asks for.
    enum TimerFiredAction: Equatable {
        /// Only the application owes something: nothing is timed until that changes.
        case untimed
        /// A deadline passed: close the connection.
        case close
        /// Nothing expired yet: schedule the timer again for this moment.
        case schedule(NIODeadline)
    }

    // MARK: Connection events

    /// The connection is active (or this handler joined an active one): the idle clock starts.
    mutating func connectionActive(now: NIODeadline) -> TimerAction {
        idleSince = now
        return ensureTimer()
    }

    /// The connection ended or the handler left it: the timer is cancelled and nothing more is timed.
    mutating func connectionEnded() {
        ended = true
        timerDeadline = nil
    }

    /// Whether a request passed on is still unanswered: anything read after it must be answered
    /// after it.
    var isAnsweringForwarded: Bool { decodedRequests > forwardedResponses }

    // MARK: Reading

    /// Bytes arrived; then ``nextAction(isWritable:now:)`` until it says done.
    mutating func bytesReceived(_ bytes: ByteBuffer, now: NIODeadline) {
        if requestStartedAt == nil { requestStartedAt = now }
        if batchStartedAt == nil { batchStartedAt = now }
        if var unread = self.unread.take() {
            var bytes = bytes
            unread.writeBuffer(&bytes)
            self.unread = unread
        } else {
            unread = bytes
        }
    }

    /// The next request of the bytes received, or what remains to be done once none is left to
    /// handle now. `isWritable` is asked for every request, as answering one may fill the socket.
    mutating func nextAction(isWritable: Bool, now: NIODeadline) -> InboundAction {
        if handedOver {
            guard let bytes = unread.take() else { return .done(timerAfterRead()) }
            forwardedSinceReadComplete = true
            return .forward(bytes)
        }
        guard !paused, !downloading, var buffer = unread.take() else { return .done(timerAfterRead()) }
        guard buffer.readableBytes > 0 else {
            // Every byte received is consumed: no request is being read.
            requestStartedAt = nil
            idleSince = now
            return .done(.keep)
        }
        guard isWritable else {
            // The client is not reading: answer nothing more until it does.
            paused = true
            unread = buffer
            return .done(timerAfterRead())
        }
        switch buffer.withUnsafeReadableBytes(LeanRequestParser.parse) {
        case .needMore:
            unread = buffer
            return .done(timerAfterRead())
        case .feed(let request, let length):
            // The reader never counts more bytes than it was given; should it, the decoder decides.
            guard let bytes = buffer.readSlice(length: length) else { return handOver(buffer) }
            unread = buffer
            // Behind a passed-on request: the application answers it, after that one.
            guard forwardedResponses == forwardedRequests else { return passOn(bytes) }
            return .answer(request, bytes: bytes)
        case .content(let request, let length):
            guard let bytes = buffer.readSlice(length: length) else { return handOver(buffer) }
            unread = buffer
            guard forwardedResponses == forwardedRequests else { return passOn(bytes) }
            return .content(request, bytes: bytes)
        case .other(let length):
            guard let bytes = buffer.readSlice(length: length) else { return handOver(buffer) }
            unread = buffer
            return passOn(bytes)
        case .handOver:
            return handOver(buffer)
        }
    }

    /// The feed of the last ``InboundAction/answer(_:bytes:)`` was answered here.
    mutating func answeredHere() {
        wroteSinceFlush = true
    }

    /// The feed of the last ``InboundAction/answer(_:bytes:)`` is not a published feed after all
    /// (an unknown app, a bad parameter): its bytes are passed on, and the application explains.
    mutating func passedOn() {
        forwardedRequests += 1
        forwardedSinceReadComplete = true
    }

    /// The body of the last ``InboundAction/content(_:bytes:)`` is still being sent: nothing else
    /// is answered or read until ``downloadFinished(now:)``.
    mutating func downloadStarted() {
        downloading = true
    }

    /// The last bytes of the download are written (handed to the socket). Then, as after the
    /// socket drained: answer what waits (``nextAction(isWritable:now:)`` until done, then
    /// ``writableAgain()``), pass on a held event (``releaseHeldEvent()``), and issue a held read
    /// (``releaseHeldRead(isWritable:)``).
    mutating func downloadFinished(now: NIODeadline) -> TimerAction {
        downloading = false
        idleSince = now
        // A request that arrived during the download waited for the server, not for the client.
        if requestStartedAt != nil { requestStartedAt = now }
        return ensureTimer()
    }

    /// Whether a file is being sent.
    var isDownloading: Bool { downloading }

    /// Whether an inbound event held during a download is to be passed on now.
    mutating func releaseHeldEvent() -> Bool {
        guard eventHeld, !downloading else { return false }
        eventHeld = false
        return true
    }

    /// An inbound event (the input closed) arrived: during a download it waits for the download's
    /// end (true), since the decoder must not answer anything before the file is sent; otherwise
    /// ``inputEvent()`` says what to pass on with it.
    mutating func holdsInputEvent() -> Bool {
        guard downloading else { return false }
        eventHeld = true
        handedOver = true
        return true
    }

    /// The input ended (or another event came from the front): what arrived of a request is the
    /// decoder's to judge first. The bytes to pass on, if any.
    mutating func inputEvent() -> ByteBuffer? {
        guard let bytes = unread.take() else { return nil }
        handedOver = true
        paused = false
        forwardedSinceReadComplete = true
        return bytes
    }

    /// The read batch ended.
    mutating func readComplete() -> BatchEnd {
        var end = endBatch()
        // Answered here with nothing behind this handler owing an answer, so nothing there holds
        // reads back (the application's channel and the report handler only do so while they have
        // requests). Asking for the next bytes from here makes NIO skip its own read request,
        // which would pass through every handler behind this one to arrive at the same place:
        // about 5% of a feed request.
        end.read =
            !end.fireReadComplete && decodedRequests == forwardedResponses && !decoderInRequest && !handedOver && !downloading
        return end
    }

    /// A handler asks for the next bytes: whether to read now. Reads stop while the socket is not
    /// writable, whichever handler asks: a client that sends requests and never reads the answers
    /// gets nothing more read from it.
    mutating func readRequested(isWritable: Bool) -> Bool {
        guard isWritable, !downloading else {
            readHeld = true
            return false
        }
        return true
    }

    // MARK: Writing

    /// The socket's writability changed.
    mutating func writabilityChanged(isWritable: Bool, now: NIODeadline) -> WritabilityAction {
        guard isWritable else {
            writeStalledSince = now
            return .stalled(ensureTimer())
        }
        writeStalledSince = nil
        guard paused, !downloading else { return .drained(resume: false) }
        paused = false
        return .drained(resume: true)
    }

    /// The requests held back while the socket was full have been handled (``WritabilityAction/drained(resume:)``).
    mutating func writableAgain() -> BatchEnd {
        endBatch()
    }

    /// After the socket drained: whether to issue the read held back while it was full.
    mutating func releaseHeldRead(isWritable: Bool) -> Bool {
        guard readHeld && isWritable && !downloading else { return false }
        readHeld = false
        return true
    }

    // MARK: What the decoder and the application do with passed-on requests

    /// The decoder read a passed-on request's head.
    mutating func decodedRequestBegan(now: NIODeadline) -> TimerAction {
        decoderInRequest = true
        guard requestStartedAt == nil else { return .keep }
        requestStartedAt = now
        return ensureTimer()
    }

    /// A passed-on request was read whole: its time from now on is the application's, until answered.
    mutating func decodedRequestEnded() {
        decoderInRequest = false
        decodedRequests += 1
        requestStartedAt = nil
    }

    /// The application's response to a passed-on request is written: the wait for the next request starts.
    mutating func forwardedResponseWritten(now: NIODeadline) -> TimerAction {
        forwardedResponses += 1
        idleSince = now
        return ensureTimer()
    }

    /// The decoder refused what it was given: nothing after it is answered here.
    mutating func decoderFailed() {
        handedOver = true
    }

    // MARK: Deadlines

    /// When the connection must close if nothing changes; nil while only the application owes something.
    var expiry: NIODeadline? {
        var expiry = writeStalledSince.map { $0 + readDeadline }
        // A download's time is the client's only while it does not drain the socket: a deadline
        // per progress, not per file (a large file to a slow but steady reader takes its time).
        if downloading { return expiry }
        let reading = requestStartedAt ?? (decoderInRequest ? idleSince : nil)
        if let reading {
            expiry = min(expiry ?? .distantFuture, reading + readDeadline)
        } else if !isAnsweringForwarded {
            expiry = min(expiry ?? .distantFuture, idleSince + idleTimeout)
        }
        return expiry
    }

    /// The timer fired.
    mutating func timerFired(now: NIODeadline) -> TimerFiredAction {
        timerDeadline = nil
        guard !ended, let expiry else { return .untimed }  // the application's time
        if expiry <= now { return .close }
        timerDeadline = expiry
        return .schedule(expiry)
    }

    // MARK: Helpers

    /// Makes sure a timer fires no later than the expiry. A timer set for an earlier moment is left
    /// alone: when it fires it looks at the expiry as it then is (rescheduling per request cost a
    /// tenth of the time).
    private mutating func ensureTimer() -> TimerAction {
        guard !ended, let expiry else { return .keep }
        if let timerDeadline, timerDeadline <= expiry { return .keep }
        timerDeadline = expiry
        return .schedule(expiry)
    }

    /// After received bytes were handled: a request still arriving may have a deadline before the
    /// timer (set for the idle timeout, say). Whole requests, the usual case, leave the timer alone.
    private mutating func timerAfterRead() -> TimerAction {
        requestStartedAt == nil ? .keep : ensureTimer()
    }

    private mutating func passOn(_ bytes: ByteBuffer) -> InboundAction {
        passedOn()
        return .forward(bytes)
    }

    /// Passes `bytes` and everything after them on this connection to the decoder.
    private mutating func handOver(_ bytes: ByteBuffer) -> InboundAction {
        handedOver = true
        paused = false
        forwardedSinceReadComplete = true
        return .forward(bytes)
    }

    /// Ends a batch: flush if anything was answered here, and tell the handlers behind if anything
    /// was passed on to them.
    private mutating func endBatch() -> BatchEnd {
        // One observation per batch answered here (a batch is one request unless pipelined): from
        // its bytes' arrival to its answers' hand-off to the socket.
        let end = BatchEnd(
            flush: wroteSinceFlush, batchStartedAt: wroteSinceFlush ? batchStartedAt : nil, fireReadComplete: forwardedSinceReadComplete,
            read: false)
        wroteSinceFlush = false
        batchStartedAt = nil
        forwardedSinceReadComplete = false
        return end
    }
}
