import NIOCore

/// What one connection of ``LeanConnectionHandler`` is doing, and what it must do next: the
/// deadlines, backpressure and request order of the lean path, decided without a channel.
///
/// The handler tells it every event (bytes received, a read batch ended, the socket's writability
/// changed, the decoder began or ended a request, a passed-on request was answered, the timer
/// fired, the connection ended) with the moment it happened, and does what it answers: pass bytes
/// on, answer a feed or a content file, flush, read, schedule the timer, close. Nothing here
/// touches NIO's pipeline, so every rule can be tested with plain values (and the handler with an
/// `EmbeddedChannel` and its virtual clock).
///
/// What the connection is doing is one ``Phase``, whose cases carry only what holds while it lasts:
/// idle since a moment; reading a request here, from its first byte; answering, while requests passed
/// on to the decoder are not all answered; sending a content file; handed over to the decoder for
/// good; ended. Beside it stay three facts that hold whatever the connection is doing: the socket's
/// backpressure, the read batch under way, and the moment the timer fires.
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

    /// What the connection is doing.
    private var phase: Phase
    /// Beside the phase: the socket fills and drains whatever the connection is doing, and a read
    /// or requests held back for it wait across phases (a download may end while it is full).
    private var backpressure = Backpressure()
    /// Beside the phase: one read batch may answer feeds, pass requests on and start a download,
    /// and it is flushed and counted as one.
    private var batch = Batch()
    /// When the scheduled timer fires; nil while none is scheduled. Beside the phase: one timer
    /// serves every deadline, and one set for an earlier moment outlives the phase that set it
    /// (when it fires, it looks at the expiry as it then is).
    private var timerDeadline: NIODeadline?

    init(readDeadline: TimeAmount, idleTimeout: TimeAmount, now: NIODeadline) {
        self.readDeadline = readDeadline
        self.idleTimeout = idleTimeout
        self.phase = .idle(Idle(since: now))
    }

    // MARK: Phases

    /// What the connection is doing. Each case holds what its rules need and nothing more, so that
    /// a state no rule allows (a download with a read deadline of its own, an idle clock while a
    /// request is read, an order to keep once everything goes to the decoder) cannot be written.
    enum Phase {
        /// Nothing is read and nothing is owed: only the idle clock runs.
        case idle(Idle)
        /// A request arrives and is read here, with nothing passed on outstanding: only its read
        /// deadline runs, and its bytes are kept until it is whole.
        case reading(Reading)
        /// Requests passed on to the decoder are outstanding: the counts keep what follows behind
        /// them, and a request may be read here or by the decoder meanwhile.
        case answering(Answering)
        /// A content file's body is being sent: nothing else is answered or read, so the bytes
        /// that arrive wait, and what follows is decided when it ends.
        case downloading(Downloading)
        /// The decoder reads every byte: no order is kept here, only the deadlines of what the
        /// decoder reports.
        case handedOver(HandedOver)
        /// The connection ended or the handler left it: nothing more is answered or timed.
        case ended
        /// Only while a phase's data changes in place, so that its buffer is not copied.
        case modifying
    }

    /// Waiting for a request.
    struct Idle {
        /// When the last exchange ended (or the connection opened): the idle clock's start.
        var since: NIODeadline
        /// The start of a request that arrived while the decoder read the one before it, if any:
        /// read here with the next bytes, whose arrival starts its read deadline.
        var received: ByteBuffer?
    }

    /// Reading a request here.
    struct Reading {
        /// When its first byte arrived: the read deadline's start.
        var since: NIODeadline
        /// What has arrived of it, and of the requests after it: the start of a request whose
        /// header block has not all arrived, or whole requests waiting for the socket to drain.
        var received: ByteBuffer
    }

    /// Requests read here while passed-on requests are outstanding; ``Idle`` and ``Reading`` are
    /// its forms with nothing outstanding (``readingHere``).
    struct Answering {
        var forwarded: Forwarded
        /// When the first byte of the request being read arrived, here or by the decoder; nil
        /// while none is.
        var readingSince: NIODeadline?
        /// When the last exchange ended: the idle clock's start once nothing is read or owed, and
        /// the read deadline's while the decoder is inside a request whose start was consumed here.
        var idleSince: NIODeadline
        /// Bytes received and not yet consumed.
        var received: ByteBuffer?
    }

    /// Sending a content file.
    struct Downloading {
        /// What is outstanding of the requests passed on before the download.
        var forwarded: Forwarded
        /// Bytes of a request arrived during the download: its read deadline starts when the
        /// download ends, as it waited for the server, not for the client.
        var requestArrived: Bool
        /// What arrived after the download's request: it waits, unread, until the file is sent.
        var received: ByteBuffer?
        /// Whether the requests that waited are read here afterwards, or go to the decoder with
        /// everything after them (the decoder refused something, or an inbound event arrived,
        /// which is passed on after the download).
        var afterwards: AfterDownload
    }

    enum AfterDownload {
        case readHere
        case handOver(eventHeld: Bool)
    }

    /// Everything goes to the decoder.
    struct HandedOver {
        /// Requests the decoder read whole, less the answers written: above zero, the application's time.
        var owed: Int
        /// The decoder is inside a request: its head read, its end not yet.
        var decoderInRequest: Bool
        /// When the first byte of the request being read arrived; nil while none is.
        var readingSince: NIODeadline?
        /// When the last exchange ended: the idle clock's start (as in ``Answering``).
        var idleSince: NIODeadline
        /// Bytes received and not yet passed on.
        var received: ByteBuffer?
        /// An inbound event held during a download is to be passed on (``releaseHeldEvent()``).
        var eventHeld: Bool
    }

    /// The requests passed on to the decoder, as the handlers behind it report them.
    struct Forwarded {
        /// Requests delimited here and passed on, less the answers written: a feed is answered
        /// here only at zero, so that nothing written here overtakes an earlier request's answer.
        var unanswered = 0
        /// Requests the decoder read whole, less the answers written: above zero, the
        /// application's time, never the client's (below, an answer was written before its
        /// request's end, as by an application that answers a head).
        var owed = 0
        /// The decoder is inside a request: its head read, its end not yet.
        var decoderInRequest = false

        /// Nothing passed on is outstanding: the connection is idle or reading again.
        var isSettled: Bool { unanswered == 0 && owed == 0 && !decoderInRequest }
    }

    /// What the socket's not draining holds back.
    struct Backpressure {
        /// Since when the socket has not been writable; nil while it is.
        var stalledSince: NIODeadline?
        /// Received requests wait until the socket is writable again.
        var requestsHeld = false
        /// A read was asked for while the socket was not writable (or a file was being sent);
        /// issued when that ends.
        var readHeld = false
    }

    /// The read batch under way.
    struct Batch {
        /// When its first bytes arrived, for the feed answer-time histogram.
        var startedAt: NIODeadline?
        /// A feed was answered in it and not yet flushed.
        var answeredHere = false
        /// Something was passed on in it: if not, the decoder and the application's async channel
        /// are not told that the batch ended, which would only wake its task for nothing.
        var passedOn = false
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
        if var here = takeReadingHere() {
            here.idleSince = now
            settle(here)
        } else if case .handedOver(var handedOver) = phase {
            handedOver.idleSince = now
            phase = .handedOver(handedOver)
        }  // a download sets the idle clock again when it ends
        return ensureTimer()
    }

    /// The connection ended or the handler left it: nothing more is answered or timed.
    mutating func connectionEnded() {
        phase = .ended
        timerDeadline = nil
    }

    /// Whether the connection ended (``connectionEnded()``).
    var hasEnded: Bool {
        if case .ended = phase { return true }
        return false
    }

    /// Whether a request passed on is still unanswered: anything read after it must be answered
    /// after it.
    var isAnsweringForwarded: Bool {
        switch phase {
        case .answering(let answering): answering.forwarded.owed > 0
        case .downloading(let downloading): downloading.forwarded.owed > 0
        case .handedOver(let handedOver): handedOver.owed > 0
        case .idle, .reading, .ended, .modifying: false
        }
    }

    // MARK: Reading

    /// Bytes arrived; then ``nextAction(isWritable:now:)`` until it says done.
    mutating func bytesReceived(_ bytes: ByteBuffer, now: NIODeadline) {
        if batch.startedAt == nil { batch.startedAt = now }
        if var here = takeReadingHere() {
            if here.readingSince == nil { here.readingSince = now }
            Self.append(bytes, to: &here.received)
            return settle(here)
        }
        switch phase {
        case .downloading(var downloading):
            phase = .modifying
            downloading.requestArrived = true
            Self.append(bytes, to: &downloading.received)
            phase = .downloading(downloading)
        case .handedOver(var handedOver):
            phase = .modifying
            if handedOver.readingSince == nil { handedOver.readingSince = now }
            Self.append(bytes, to: &handedOver.received)
            phase = .handedOver(handedOver)
        case .idle, .reading, .answering, .ended, .modifying:
            break
        }
    }

    /// The next request of the bytes received, or what remains to be done once none is left to
    /// handle now. `isWritable` is asked for every request, as answering one may fill the socket.
    mutating func nextAction(isWritable: Bool, now: NIODeadline) -> InboundAction {
        if let here = takeReadingHere() { return readHere(here, isWritable: isWritable, now: now) }
        switch phase {
        case .downloading(var downloading):
            // What arrives during a download waits for its end, unless it goes to the decoder anyway.
            guard case .handOver = downloading.afterwards else { return .done(timerAfterRead()) }
            phase = .modifying
            let bytes = downloading.received.take()
            phase = .downloading(downloading)
            return forward(bytes)
        case .handedOver(var handedOver):
            phase = .modifying
            let bytes = handedOver.received.take()
            phase = .handedOver(handedOver)
            return forward(bytes)
        case .idle, .reading, .answering, .ended, .modifying:
            return .done(.keep)
        }
    }

    /// The feed of the last ``InboundAction/answer(_:bytes:)`` was answered here.
    mutating func answeredHere() {
        batch.answeredHere = true
    }

    /// The feed of the last ``InboundAction/answer(_:bytes:)`` is not a published feed after all
    /// (an unknown app, a bad parameter): its bytes are passed on, and the application explains.
    mutating func passedOn() {
        batch.passedOn = true
        if var here = takeReadingHere() {
            here.forwarded.unanswered += 1
            settle(here)
        } else if case .downloading(var downloading) = phase {
            downloading.forwarded.unanswered += 1
            phase = .downloading(downloading)
        }
    }

    /// The body of the last ``InboundAction/content(_:bytes:)`` is still being sent: nothing else
    /// is answered or read until ``downloadFinished(now:)``.
    mutating func downloadStarted() {
        // Content is answered only while requests are read here.
        guard let here = takeReadingHere() else { return }
        phase = .downloading(
            Downloading(
                forwarded: here.forwarded, requestArrived: here.readingSince != nil, received: here.received, afterwards: .readHere))
    }

    /// The last bytes of the download are written (handed to the socket). Then, as after the
    /// socket drained: answer what waits (``nextAction(isWritable:now:)`` until done, then
    /// ``writableAgain()``), pass on a held event (``releaseHeldEvent()``), and issue a held read
    /// (``releaseHeldRead(isWritable:)``).
    mutating func downloadFinished(now: NIODeadline) -> TimerAction {
        guard case .downloading(let downloading) = phase else { return .keep }
        // A request that arrived during the download waited for the server, not for the client.
        let here = Answering(
            forwarded: downloading.forwarded, readingSince: downloading.requestArrived ? now : nil, idleSince: now,
            received: downloading.received)
        switch downloading.afterwards {
        case .readHere: settle(here)
        case .handOver(let eventHeld): handOver(here, received: here.received, eventHeld: eventHeld)
        }
        return ensureTimer()
    }

    /// Whether a file is being sent.
    var isDownloading: Bool {
        if case .downloading = phase { return true }
        return false
    }

    /// Whether an inbound event held during a download is to be passed on now.
    mutating func releaseHeldEvent() -> Bool {
        guard case .handedOver(var handedOver) = phase, handedOver.eventHeld else { return false }
        handedOver.eventHeld = false
        phase = .handedOver(handedOver)
        return true
    }

    /// An inbound event (the input closed) arrived: during a download it waits for the download's
    /// end (true), since the decoder must not answer anything before the file is sent; otherwise
    /// ``inputEvent()`` says what to pass on with it.
    mutating func holdsInputEvent() -> Bool {
        guard case .downloading(var downloading) = phase else { return false }
        downloading.afterwards = .handOver(eventHeld: true)
        phase = .downloading(downloading)
        return true
    }

    /// The input ended (or another event came from the front): what arrived of a request is the
    /// decoder's to judge first. The bytes to pass on, if any.
    mutating func inputEvent() -> ByteBuffer? {
        let bytes: ByteBuffer
        switch phase {
        case .idle, .reading, .answering:
            guard let here = readingHere, let received = here.received else { return nil }
            bytes = received
            handOver(here, received: nil)
        case .downloading(var downloading):
            guard let received = downloading.received else { return nil }
            bytes = received
            downloading.received = nil
            if case .readHere = downloading.afterwards { downloading.afterwards = .handOver(eventHeld: false) }
            phase = .downloading(downloading)
        case .handedOver(var handedOver):
            guard let received = handedOver.received else { return nil }
            bytes = received
            handedOver.received = nil
            phase = .handedOver(handedOver)
        case .ended, .modifying:
            return nil
        }
        backpressure.requestsHeld = false
        batch.passedOn = true
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
        let forwarded = readingHere?.forwarded
        end.read = !end.fireReadComplete && forwarded?.owed == 0 && forwarded?.decoderInRequest == false
        return end
    }

    /// A handler asks for the next bytes: whether to read now. Reads stop while the socket is not
    /// writable, whichever handler asks: a client that sends requests and never reads the answers
    /// gets nothing more read from it.
    mutating func readRequested(isWritable: Bool) -> Bool {
        guard isWritable, !isDownloading else {
            backpressure.readHeld = true
            return false
        }
        return true
    }

    // MARK: Writing

    /// The socket's writability changed.
    mutating func writabilityChanged(isWritable: Bool, now: NIODeadline) -> WritabilityAction {
        guard isWritable else {
            backpressure.stalledSince = now
            return .stalled(ensureTimer())
        }
        backpressure.stalledSince = nil
        guard backpressure.requestsHeld, !isDownloading else { return .drained(resume: false) }
        backpressure.requestsHeld = false
        return .drained(resume: true)
    }

    /// The requests held back while the socket was full have been handled (``WritabilityAction/drained(resume:)``).
    mutating func writableAgain() -> BatchEnd {
        endBatch()
    }

    /// After the socket drained: whether to issue the read held back while it was full.
    mutating func releaseHeldRead(isWritable: Bool) -> Bool {
        guard backpressure.readHeld && isWritable && !isDownloading else { return false }
        backpressure.readHeld = false
        return true
    }

    // MARK: What the decoder and the application do with passed-on requests

    /// The decoder read a passed-on request's head.
    mutating func decodedRequestBegan(now: NIODeadline) -> TimerAction {
        let started: Bool
        if var here = takeReadingHere() {
            here.forwarded.decoderInRequest = true
            started = here.readingSince == nil
            if started { here.readingSince = now }
            settle(here)
        } else {
            switch phase {
            case .downloading(var downloading):
                downloading.forwarded.decoderInRequest = true
                started = !downloading.requestArrived
                downloading.requestArrived = true
                phase = .downloading(downloading)
            case .handedOver(var handedOver):
                handedOver.decoderInRequest = true
                started = handedOver.readingSince == nil
                if started { handedOver.readingSince = now }
                phase = .handedOver(handedOver)
            case .idle, .reading, .answering, .ended, .modifying:
                started = false
            }
        }
        return started ? ensureTimer() : .keep
    }

    /// A passed-on request was read whole: its time from now on is the application's, until answered.
    mutating func decodedRequestEnded() {
        if var here = takeReadingHere() {
            here.forwarded.decoderInRequest = false
            here.forwarded.owed += 1
            here.readingSince = nil
            return settle(here)
        }
        switch phase {
        case .downloading(var downloading):
            downloading.forwarded.decoderInRequest = false
            downloading.forwarded.owed += 1
            downloading.requestArrived = false
            phase = .downloading(downloading)
        case .handedOver(var handedOver):
            handedOver.decoderInRequest = false
            handedOver.owed += 1
            handedOver.readingSince = nil
            phase = .handedOver(handedOver)
        case .idle, .reading, .answering, .ended, .modifying:
            break
        }
    }

    /// The application's response to a passed-on request is written: the wait for the next request starts.
    mutating func forwardedResponseWritten(now: NIODeadline) -> TimerAction {
        if var here = takeReadingHere() {
            here.forwarded.unanswered -= 1
            here.forwarded.owed -= 1
            here.idleSince = now
            settle(here)
        } else if case .downloading(var downloading) = phase {
            // The idle clock starts again when the download ends.
            downloading.forwarded.unanswered -= 1
            downloading.forwarded.owed -= 1
            phase = .downloading(downloading)
        } else if case .handedOver(var handedOver) = phase {
            handedOver.owed -= 1
            handedOver.idleSince = now
            phase = .handedOver(handedOver)
        }
        return ensureTimer()
    }

    /// The decoder refused what it was given: nothing after it is answered here.
    mutating func decoderFailed() {
        if let here = takeReadingHere() {
            handOver(here, received: here.received)
        } else if case .downloading(var downloading) = phase, case .readHere = downloading.afterwards {
            downloading.afterwards = .handOver(eventHeld: false)
            phase = .downloading(downloading)
        }
    }

    // MARK: Deadlines

    /// When the connection must close if nothing changes; nil while only the application owes something.
    var expiry: NIODeadline? {
        let connection: NIODeadline?
        switch phase {
        case .idle, .reading, .answering:
            guard let here = readingHere else { return nil }
            connection = expiry(
                readingSince: here.readingSince, idleSince: here.idleSince, decoderInRequest: here.forwarded.decoderInRequest,
                owed: here.forwarded.owed)
        case .handedOver(let handedOver):
            connection = expiry(
                readingSince: handedOver.readingSince, idleSince: handedOver.idleSince, decoderInRequest: handedOver.decoderInRequest,
                owed: handedOver.owed)
        case .downloading:
            // A download's time is the client's only while it does not drain the socket: a deadline
            // per progress, not per file (a large file to a slow but steady reader takes its time).
            connection = nil
        case .ended, .modifying:
            return nil
        }
        guard let stalled = backpressure.stalledSince.map({ $0 + readDeadline }) else { return connection }
        return min(stalled, connection ?? .distantFuture)
    }

    /// The timer fired.
    mutating func timerFired(now: NIODeadline) -> TimerFiredAction {
        timerDeadline = nil
        guard !hasEnded, let expiry else { return .untimed }  // the application's time
        if expiry <= now { return .close }
        timerDeadline = expiry
        return .schedule(expiry)
    }

    // MARK: Helpers

    /// The expiry of a phase that reads requests: a request being read (here, or by the decoder
    /// from where this connection's bytes were last consumed) has the read deadline; otherwise
    /// the application's time is untimed, and a connection that owes nothing waits the idle timeout.
    private func expiry(readingSince: NIODeadline?, idleSince: NIODeadline, decoderInRequest: Bool, owed: Int) -> NIODeadline? {
        if let reading = readingSince ?? (decoderInRequest ? idleSince : nil) { return reading + readDeadline }
        return owed > 0 ? nil : idleSince + idleTimeout
    }

    /// Makes sure a timer fires no later than the expiry. A timer set for an earlier moment is left
    /// alone: when it fires it looks at the expiry as it then is (rescheduling per request cost a
    /// tenth of the time).
    private mutating func ensureTimer() -> TimerAction {
        guard !hasEnded, let expiry else { return .keep }
        if let timerDeadline, timerDeadline <= expiry { return .keep }
        timerDeadline = expiry
        return .schedule(expiry)
    }

    /// After received bytes were handled: a request still arriving may have a deadline before the
    /// timer (set for the idle timeout, say). Whole requests, the usual case, leave the timer alone.
    private mutating func timerAfterRead() -> TimerAction {
        let reading: Bool
        switch phase {
        case .idle, .reading, .answering: reading = readingHere?.readingSince != nil
        case .downloading(let downloading): reading = downloading.requestArrived
        case .handedOver(let handedOver): reading = handedOver.readingSince != nil
        case .ended, .modifying: reading = false
        }
        return reading ? ensureTimer() : .keep
    }

    /// While requests are read here, what the phase knows as ``Answering``: ``Idle`` and
    /// ``Reading`` are its forms with nothing passed on outstanding (a reading request's first
    /// byte stands in for the idle clock, which its end sets again before it can count).
    private var readingHere: Answering? {
        switch phase {
        case .idle(let idle):
            Answering(forwarded: Forwarded(), readingSince: nil, idleSince: idle.since, received: idle.received)
        case .reading(let reading):
            Answering(forwarded: Forwarded(), readingSince: reading.since, idleSince: reading.since, received: reading.received)
        case .answering(let answering):
            answering
        case .downloading, .handedOver, .ended, .modifying:
            nil
        }
    }

    /// ``readingHere``, the phase left ``Phase/modifying`` (so that its buffer is not shared) until
    /// ``settle(_:)`` or a hand-over sets it again.
    private mutating func takeReadingHere() -> Answering? {
        guard let here = readingHere else { return nil }
        phase = .modifying
        return here
    }

    /// The phase in which requests are read here: answering while anything passed on is
    /// outstanding, else reading while a request is arriving, else idle.
    private mutating func settle(_ here: Answering) {
        if !here.forwarded.isSettled {
            phase = .answering(here)
        } else if let since = here.readingSince, let received = here.received {
            phase = .reading(Reading(since: since, received: received))
        } else {
            // Only the decoder reads a request without bytes here, and it is outstanding.
            phase = .idle(Idle(since: here.idleSince, received: here.received))
        }
    }

    /// The next request of what was received, read here: answered, passed on or handed over, or
    /// held back. Sets the phase, which is ``Phase/modifying`` when called.
    private mutating func readHere(_ here: Answering, isWritable: Bool, now: NIODeadline) -> InboundAction {
        var here = here
        guard !backpressure.requestsHeld, var buffer = here.received.take() else {
            settle(here)
            return .done(timerAfterRead())
        }
        guard buffer.readableBytes > 0 else {
            // Every byte received is consumed: no request is being read.
            here.readingSince = nil
            here.idleSince = now
            settle(here)
            return .done(.keep)
        }
        // The client is not reading: answer nothing more until it does.
        if !isWritable { backpressure.requestsHeld = true }
        let parsed = isWritable ? buffer.withUnsafeReadableBytes(LeanRequestParser.parse) : .needMore
        switch parsed {
        case .needMore:
            here.received = buffer
            settle(here)
            return .done(timerAfterRead())
        case .handOver:
            return handOver(buffer, here)
        case .feed(_, let length), .content(_, let length), .other(let length):
            // The reader never counts more bytes than it was given; should it, the decoder decides.
            guard let bytes = buffer.readSlice(length: length) else { return handOver(buffer, here) }
            here.received = buffer
            settle(here)
            // Behind a passed-on request: the application answers it, after that one.
            switch parsed {
            case .feed(let request, _) where here.forwarded.unanswered == 0: return .answer(request, bytes: bytes)
            case .content(let request, _) where here.forwarded.unanswered == 0: return .content(request, bytes: bytes)
            default: return passOn(bytes)
            }
        }
    }

    private mutating func passOn(_ bytes: ByteBuffer) -> InboundAction {
        passedOn()
        return .forward(bytes)
    }

    /// Passes `bytes` and everything after them on this connection to the decoder.
    private mutating func handOver(_ bytes: ByteBuffer, _ here: Answering) -> InboundAction {
        handOver(here, received: nil)
        backpressure.requestsHeld = false
        batch.passedOn = true
        return .forward(bytes)
    }

    /// From now on the decoder reads every byte of this connection.
    private mutating func handOver(_ here: Answering, received: ByteBuffer?, eventHeld: Bool = false) {
        phase = .handedOver(
            HandedOver(
                owed: here.forwarded.owed, decoderInRequest: here.forwarded.decoderInRequest, readingSince: here.readingSince,
                idleSince: here.idleSince, received: received, eventHeld: eventHeld))
    }

    /// Passes on what waited for the decoder, if anything.
    private mutating func forward(_ bytes: ByteBuffer?) -> InboundAction {
        guard let bytes else { return .done(timerAfterRead()) }
        batch.passedOn = true
        return .forward(bytes)
    }

    /// Appends `bytes` to what was received before, without copying the buffer when only this
    /// phase holds it (the phase is ``Phase/modifying`` meanwhile).
    private static func append(_ bytes: ByteBuffer, to received: inout ByteBuffer?) {
        guard var unread = received.take() else {
            received = bytes
            return
        }
        var bytes = bytes
        unread.writeBuffer(&bytes)
        received = unread
    }

    /// Ends a batch: flush if anything was answered here, and tell the handlers behind if anything
    /// was passed on to them.
    private mutating func endBatch() -> BatchEnd {
        // One observation per batch answered here (a batch is one request unless pipelined): from
        // its bytes' arrival to its answers' hand-off to the socket.
        let end = BatchEnd(
            flush: batch.answeredHere, batchStartedAt: batch.answeredHere ? batch.startedAt : nil, fireReadComplete: batch.passedOn,
            read: false)
        batch = Batch()
        return end
    }
}
