import NIOCore
import Testing

@testable import CatalogServer

/// The rules of ``LeanConnectionStateMachine`` as plain values: events in, actions out, and the
/// clock a number the test sets. The handler that carries the actions out is tested with an
/// `EmbeddedChannel` in `LeanConnectionHandlerTests`, and on real sockets in `HostileClientTests`,
/// `ProtectionTests` and `TLSDeadlineTests`.
@Suite struct LeanConnectionStateMachineTests {
    static let readDeadline = TimeAmount.seconds(10)
    static let idleTimeout = TimeAmount.seconds(30)
    static let start = NIODeadline.uptimeNanoseconds(1_000_000_000)

    static let feed = "GET /v1/apps/com.example.served/catalog.json HTTP/1.1\r\nHost: x\r\n\r\n"
    static let other = "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n"
    static let post = "POST /v1/apps/com.example.served/invalid-identifiers HTTP/1.1\r\nContent-Length: 2\r\n\r\n{}"

    static func machine() -> LeanConnectionStateMachine {
        var machine = LeanConnectionStateMachine(readDeadline: readDeadline, idleTimeout: idleTimeout, now: start)
        Self.check(machine.connectionActive(now: start), .schedule(start + idleTimeout))
        return machine
    }

    /// `#expect` of a value, for calls that change the machine (which an expectation's expression cannot hold).
    static func check<T: Equatable>(_ value: T, _ expected: T, sourceLocation: SourceLocation = #_sourceLocation) {
        #expect(value == expected, sourceLocation: sourceLocation)
    }

    static func at(_ seconds: Int64) -> NIODeadline { start + .seconds(seconds) }

    /// What the machine does with `text` received at `now`, up to its `done`.
    enum Step: Equatable {
        case answer(String)
        /// A content file asked for: answered here, its body still being sent when the test says so.
        case content(String)
        case forward(String)
        case done(LeanConnectionStateMachine.TimerAction)
    }

    static func receive(
        _ text: String, into machine: inout LeanConnectionStateMachine, at now: NIODeadline, writable: Bool = true,
        answered: Bool = true
    ) -> [Step] {
        machine.bytesReceived(ByteBuffer(string: text), now: now)
        return drain(&machine, at: now, writable: writable, answered: answered)
    }

    static func drain(
        _ machine: inout LeanConnectionStateMachine, at now: NIODeadline, writable: Bool = true, answered: Bool = true,
        downloads: Bool = false
    ) -> [Step] {
        var steps: [Step] = []
        while true {
            switch machine.nextAction(isWritable: writable, now: now) {
            case .content(_, let bytes):
                steps.append(.content(String(buffer: bytes)))
                machine.answeredHere()
                if downloads { machine.downloadStarted() }
            case .answer(_, let bytes):
                steps.append(.answer(String(buffer: bytes)))
                if answered { machine.answeredHere() } else { machine.passedOn() }
            case .forward(let bytes):
                steps.append(.forward(String(buffer: bytes)))
            case .done(let timer):
                steps.append(.done(timer))
                return steps
            }
        }
    }

    static let download =
        "GET /v1/content/\(String(repeating: "ab", count: 32))?exp=1&kid=k&sig=s HTTP/1.1\r\nHost: x\r\nRange: bytes=0-\r\n\r\n"

    /// Issue 30: while a file is being sent, a request pipelined behind it waits, unanswered and
    /// unread, and nothing more is read from the socket: a connection holds one file and one read's
    /// worth of requests, whatever the client sends. When the last bytes are written, what waited
    /// is answered and the held read issued.
    @Test func aDownloadHoldsTheRequestsAfterItAndTheReads() {
        var machine = Self.machine()
        machine.bytesReceived(ByteBuffer(string: Self.download + Self.feed), now: Self.at(1))
        Self.check(Self.drain(&machine, at: Self.at(1), downloads: true), [.content(Self.download), .done(.keep)])
        #expect(machine.isDownloading)
        Self.check(machine.readComplete().read, false)
        Self.check(machine.readRequested(isWritable: true), false)
        Self.check(machine.writabilityChanged(isWritable: true, now: Self.at(2)), .drained(resume: false))
        Self.check(machine.releaseHeldRead(isWritable: true), false)
        _ = machine.downloadFinished(now: Self.at(3))
        Self.check(Self.drain(&machine, at: Self.at(3)), [.answer(Self.feed), .done(.keep)])
        Self.check(machine.releaseHeldRead(isWritable: true), true)
    }

    /// Issue 30: a download is timed by its progress, not its length. With the socket draining, the
    /// idle timeout does not cut a long download; a client that stops reading is closed
    /// `readDeadline` after the socket filled, each time it fills.
    @Test func aDownloadIsTimedByProgressNotByItsLength() {
        var fresh = Self.machine()
        Self.check(Self.receive(Self.download, into: &fresh, at: Self.at(1)).first, .content(Self.download))
        fresh.downloadStarted()
        // Well past the idle timeout, the socket draining all along: nothing is timed.
        Self.check(fresh.timerFired(now: Self.at(1) + Self.idleTimeout + .seconds(5)), .untimed)
        Self.check(fresh.writabilityChanged(isWritable: false, now: Self.at(40)), .stalled(.schedule(Self.at(50))))
        Self.check(fresh.writabilityChanged(isWritable: true, now: Self.at(49)), .drained(resume: false))
        Self.check(fresh.writabilityChanged(isWritable: false, now: Self.at(49)), .stalled(.keep))
        Self.check(fresh.timerFired(now: Self.at(50)), .schedule(Self.at(59)))
        Self.check(fresh.timerFired(now: Self.at(59)), .close)
    }

    /// Issue 30: the input closing during a download waits for its end, so that the decoder
    /// behind answers nothing while the file's bytes are still going out.
    @Test func anEventDuringADownloadWaitsForItsEnd() {
        var machine = Self.machine()
        machine.bytesReceived(ByteBuffer(string: Self.download + "GET /heal"), now: Self.at(1))
        _ = Self.drain(&machine, at: Self.at(1), downloads: true)
        Self.check(machine.holdsInputEvent(), true)
        Self.check(machine.releaseHeldEvent(), false)
        _ = machine.downloadFinished(now: Self.at(2))
        Self.check(machine.releaseHeldEvent(), true)
        Self.check(Self.drain(&machine, at: Self.at(2)), [.forward("GET /heal"), .done(.keep)])
    }

    @Test func anIdleConnectionClosesAtTheIdleTimeout() {
        var machine = Self.machine()
        Self.check(machine.timerFired(now: Self.start + Self.idleTimeout), .close)
    }

    @Test func aWholeRequestIsAnsweredAndRestartsTheIdleClock() {
        var machine = Self.machine()
        Self.check(Self.receive(Self.feed, into: &machine, at: Self.at(20)), [.answer(Self.feed), .done(.keep)])
        Self.check(machine.readComplete(), .init(flush: true, batchStartedAt: Self.at(20), fireReadComplete: false, read: true))
        // The timer set for the first idle timeout fires, and is set again for the new one.
        Self.check(machine.timerFired(now: Self.start + Self.idleTimeout), .schedule(Self.at(20) + Self.idleTimeout))
        Self.check(machine.timerFired(now: Self.at(20) + Self.idleTimeout), .close)
    }

    @Test func aRequestTrickledInIsClosedAtTheReadDeadlineOfItsFirstByte() {
        var machine = Self.machine()
        let pieces = Array(Self.feed).map(String.init)
        // The first byte brings the deadline forward: the read deadline comes before the idle timeout.
        Self.check(Self.receive(pieces[0], into: &machine, at: Self.at(1)), [.done(.schedule(Self.at(1) + Self.readDeadline))])
        // More bytes, steadily, never move it.
        for second in 2..<10 {
            Self.check(Self.receive(pieces[second - 1], into: &machine, at: Self.at(Int64(second))), [.done(.keep)])
        }
        Self.check(machine.timerFired(now: Self.at(1) + Self.readDeadline), .close)
    }

    @Test func aRequestCompletedInTimeLiftsTheReadDeadline() {
        var machine = Self.machine()
        let split = Self.feed.index(Self.feed.startIndex, offsetBy: 20)
        _ = Self.receive(String(Self.feed[..<split]), into: &machine, at: Self.at(1))
        Self.check(Self.receive(String(Self.feed[split...]), into: &machine, at: Self.at(5)), [.answer(Self.feed), .done(.keep)])
        Self.check(machine.timerFired(now: Self.at(1) + Self.readDeadline), .schedule(Self.at(5) + Self.idleTimeout))
    }

    @Test func aPassedOnRequestIsAnsweredBeforeAnyFeedAfterIt() {
        var machine = Self.machine()
        Self.check(
            Self.receive(Self.other + Self.feed, into: &machine, at: Self.at(1)), [.forward(Self.other), .forward(Self.feed), .done(.keep)])
        Self.check(machine.readComplete(), .init(flush: false, batchStartedAt: nil, fireReadComplete: true, read: false))
        // Once every passed-on request is answered, feeds are answered here again.
        for _ in 0..<2 {
            _ = machine.decodedRequestBegan(now: Self.at(1))
            machine.decodedRequestEnded()
            _ = machine.forwardedResponseWritten(now: Self.at(2))
        }
        Self.check(Self.receive(Self.feed, into: &machine, at: Self.at(3)), [.answer(Self.feed), .done(.keep)])
    }

    @Test func aFeedThatIsNotPublishedIsPassedOnAndOrdersWhatFollows() {
        var machine = Self.machine()
        Self.check(
            Self.receive(Self.feed + Self.feed, into: &machine, at: Self.at(1), answered: false),
            [.answer(Self.feed), .forward(Self.feed), .done(.keep)])
        Self.check(machine.readComplete().fireReadComplete, true)
    }

    @Test func theApplicationsTimeIsNotTheClients() {
        var machine = Self.machine()
        _ = Self.receive(Self.other, into: &machine, at: Self.at(1))
        _ = machine.decodedRequestBegan(now: Self.at(1))
        machine.decodedRequestEnded()
        #expect(machine.isAnsweringForwarded)
        #expect(machine.expiry == nil)
        Self.check(machine.timerFired(now: Self.start + Self.idleTimeout), .untimed)
        // Answered an hour later: the idle clock starts then.
        let answered = Self.at(3600)
        Self.check(machine.forwardedResponseWritten(now: answered), .schedule(answered + Self.idleTimeout))
        #expect(!machine.isAnsweringForwarded)
    }

    @Test func aBodyBeingReadIsTheClientsTime() {
        var machine = Self.machine()
        // A request with a body is handed over: the decoder reads the rest of the connection.
        let head = String(Self.post.dropLast(2))
        Self.check(Self.receive(head, into: &machine, at: Self.at(1)), [.forward(head), .done(.schedule(Self.at(1) + Self.readDeadline))])
        Self.check(machine.decodedRequestBegan(now: Self.at(1)), .keep)
        Self.check(Self.receive("{", into: &machine, at: Self.at(5)), [.forward("{"), .done(.keep)])
        Self.check(machine.timerFired(now: Self.at(1) + Self.readDeadline), .close)
    }

    @Test func whatTheDecoderReadsAfterAHandOverStartsItsOwnReadDeadline() {
        var machine = Self.machine()
        _ = Self.receive(Self.post, into: &machine, at: Self.at(1))
        _ = machine.decodedRequestBegan(now: Self.at(1))
        machine.decodedRequestEnded()
        _ = machine.forwardedResponseWritten(now: Self.at(2))
        Self.check(machine.timerFired(now: Self.at(1) + Self.readDeadline), .schedule(Self.at(2) + Self.idleTimeout))
        // The next request's head is passed on whole, and the decoder starts the clock.
        Self.check(
            Self.receive("GET", into: &machine, at: Self.at(20)), [.forward("GET"), .done(.schedule(Self.at(20) + Self.readDeadline))])
        Self.check(machine.readComplete(), .init(flush: false, batchStartedAt: nil, fireReadComplete: true, read: false))
    }

    @Test func aRequestTheDecoderRefusedEndsTheLeanPath() {
        var machine = Self.machine()
        machine.decoderFailed()
        Self.check(
            Self.receive(Self.feed, into: &machine, at: Self.at(1)),
            [.forward(Self.feed), .done(.schedule(Self.at(1) + Self.readDeadline))])
    }

    @Test func theEndOfInputHandsOverWhatArrivedOfARequest() {
        var machine = Self.machine()
        _ = Self.receive("GET /v1/apps", into: &machine, at: Self.at(1))
        Self.check(machine.inputEvent().map { String(buffer: $0) }, "GET /v1/apps")
        Self.check(machine.inputEvent(), nil)
        Self.check(Self.receive(Self.feed, into: &machine, at: Self.at(2)), [.forward(Self.feed), .done(.keep)])
    }

    @Test func aFullSocketHoldsRequestsAndReadsUntilItDrains() {
        var machine = Self.machine()
        // The first answer fills the socket: the second request waits, unanswered.
        machine.bytesReceived(ByteBuffer(string: Self.feed + Self.feed), now: Self.at(1))
        guard case .answer = machine.nextAction(isWritable: true, now: Self.at(1)) else {
            Issue.record("the first request was not answered")
            return
        }
        machine.answeredHere()
        Self.check(machine.writabilityChanged(isWritable: false, now: Self.at(1)), .stalled(.schedule(Self.at(1) + Self.readDeadline)))
        Self.check(Self.drain(&machine, at: Self.at(1), writable: false), [.done(.keep)])
        Self.check(machine.readComplete(), .init(flush: true, batchStartedAt: Self.at(1), fireReadComplete: false, read: true))
        // Nobody reads from a client that does not read.
        Self.check(machine.readRequested(isWritable: false), false)
        // More requests arrive while the socket is full: held too.
        Self.check(Self.receive(Self.feed, into: &machine, at: Self.at(2), writable: false), [.done(.keep)])
        Self.check(machine.writabilityChanged(isWritable: true, now: Self.at(3)), .drained(resume: true))
        Self.check(Self.drain(&machine, at: Self.at(3)), [.answer(Self.feed), .answer(Self.feed), .done(.keep)])
        Self.check(machine.writableAgain(), .init(flush: true, batchStartedAt: Self.at(2), fireReadComplete: false, read: false))
        Self.check(machine.releaseHeldRead(isWritable: true), true)
        Self.check(machine.releaseHeldRead(isWritable: true), false)
    }

    @Test func aClientThatDoesNotDrainItsAnswersIsClosedAtTheReadDeadline() {
        var machine = Self.machine()
        // Even while the application owes an answer, which stops every other clock.
        _ = Self.receive(Self.other, into: &machine, at: Self.at(1))
        _ = machine.decodedRequestBegan(now: Self.at(1))
        machine.decodedRequestEnded()
        #expect(machine.expiry == nil)
        Self.check(machine.timerFired(now: Self.at(1) + Self.readDeadline), .untimed)
        Self.check(machine.writabilityChanged(isWritable: false, now: Self.at(12)), .stalled(.schedule(Self.at(12) + Self.readDeadline)))
        Self.check(machine.timerFired(now: Self.at(12) + Self.readDeadline), .close)
    }

    @Test func aSocketThatDrainsInTimeLiftsTheWriteDeadline() {
        var machine = Self.machine()
        _ = Self.receive(Self.feed, into: &machine, at: Self.at(1))
        _ = machine.writabilityChanged(isWritable: false, now: Self.at(2))
        Self.check(machine.writabilityChanged(isWritable: true, now: Self.at(3)), .drained(resume: false))
        Self.check(machine.releaseHeldRead(isWritable: true), false)
        Self.check(machine.timerFired(now: Self.at(2) + Self.readDeadline), .schedule(Self.at(1) + Self.idleTimeout))
    }

    @Test func nothingIsTimedOnceTheConnectionEnded() {
        var machine = Self.machine()
        machine.connectionEnded()
        Self.check(Self.receive("GET", into: &machine, at: Self.at(1)), [.done(.keep)])
        Self.check(machine.forwardedResponseWritten(now: Self.at(2)), .keep)
        Self.check(machine.timerFired(now: Self.at(100)), .untimed)
    }
}
