import Hummingbird
import Logging
import NIOCore
import Synchronization

/// A Hummingbird server on a free loopback port that hands every request to one handler: what the
/// stand-ins of Apple's and Google's APIs run on. The handler is set once the server's owner exists
/// (it needs the port the server bound), and answers 503 until then.
public final class LoopbackServer: Sendable {
    /// The port it bound.
    public let port: Int
    private let task: Task<Void, any Error>
    private let handler: Handler

    /// The handler, set after the server started: shared with its router.
    final class Handler: Sendable {
        let handle = Mutex<(@Sendable (Request) async throws -> Response)?>(nil)
    }

    private init(port: Int, task: Task<Void, any Error>, handler: Handler) {
        self.port = port
        self.task = task
        self.handler = handler
    }

    /// A server logging under `label`, answering 503 until ``handle(_:)`` is called.
    public static func start(label: String) async -> LoopbackServer {
        let handler = Handler()
        let router = Router()
        router.add(
            middleware: Dispatch { request in
                guard let handle = handler.handle.withLock({ $0 }) else { return Response(status: .serviceUnavailable) }
                return try await handle(request)
            })
        let (ports, continuation) = AsyncStream.makeStream(of: Int.self)
        let app = Application(
            router: router, configuration: ApplicationConfiguration(address: .hostname("127.0.0.1", port: 0)),
            onServerRunning: { channel in
                continuation.yield(channel.localAddress?.port ?? 0)
                continuation.finish()
            }, logger: Logger(label: label))
        let task = Task { try await app.runService(gracefulShutdownSignals: []) }
        var bound = 0
        for await port in ports { bound = port }
        return LoopbackServer(port: bound, task: task, handler: handler)
    }

    /// Hands every request to `handle` from now on.
    public func handle(_ handle: @escaping @Sendable (Request) async throws -> Response) {
        handler.handle.withLock { $0 = handle }
    }

    /// Stops the server.
    public func stop() async {
        task.cancel()
        _ = try? await task.value
    }
}

/// Every request to the server's one handler.
struct Dispatch<Context: RequestContext>: RouterMiddleware {
    let handle: @Sendable (Request) async throws -> Response
    init(_ handle: @escaping @Sendable (Request) async throws -> Response) { self.handle = handle }
    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        try await handle(request)
    }
}
