import Hummingbird
import NIOCore
import ServiceLifecycle

extension CatalogResponder {
    /// What operators and load balancers ask: health, readiness, the metrics, the document.
    static let operationRoutes = RouteTable(
        "operations", listener: .both,
        [
            RouteSpec("/healthz", .get, .head, metrics: "healthz") { _, _ in JSONResponse.ok(#"{"status":"ok"}"#) },
            RouteSpec("/readyz", .get, .head, metrics: "readyz") { responder, _ in await responder.readiness() },
            RouteSpec("/metrics", .get, .head, metrics: "metrics", listener: .admin) { responder, _ in responder.metricsText() },
            RouteSpec("/openapi.yaml", .get, .head, metrics: "openapi") { responder, _ in responder.openAPIDocument() },
        ])

    /// Ready once the feeds are loaded and the report store answers.
    func readiness() async -> Response {
        // From the moment a graceful shutdown begins, a load balancer must stop sending here.
        if Task.isShuttingDownGracefully { return JSONError.response(.serviceUnavailable, "shutting down") }
        let apps = store.index.apps.count
        if let reports {
            do {
                // Bounded: a pool that cannot reach its server waits for a connection far longer
                // than a load balancer's probe does, and the probe must hear "not ready" in time.
                let store = reports.store
                try await withThrowingTaskGroup(of: Void.self) { group in
                    group.addTask { try await store.ping() }
                    group.addTask {
                        try await Task.sleep(for: .seconds(2))
                        throw StoreTimeout()
                    }
                    try await group.next()
                    group.cancelAll()
                }
            } catch {
                // The store's error may name its host or file; the operator's log has it, the answer does not.
                logger.error("readiness.store", metadata: ["error": "\(error)"])
                return JSONError.response(.serviceUnavailable, "the report store does not answer")
            }
        }
        return JSONResponse.ok(#"{"status":"ready","apps":\#(apps)}"#)
    }

    /// `/metrics`, in Prometheus text format.
    func metricsText() -> Response {
        Response(
            status: .ok, headers: [.contentType: "text/plain; version=0.0.4", .cacheControl: "no-store"],
            body: ResponseBody(byteBuffer: ByteBuffer(bytes: metrics.render())))
    }

    /// `/openapi.yaml`: the public listener describes its own routes only.
    func openAPIDocument() -> Response {
        Response(
            status: .ok, headers: [.contentType: "application/yaml", .cacheControl: "no-cache"],
            body: ResponseBody(byteBuffer: ByteBuffer(bytes: role == .publicOnly ? OpenAPIDocument.publicHalf : OpenAPIDocument.bytes)))
    }
}

/// The store did not answer readiness's ping in time.
private struct StoreTimeout: Error, CustomStringConvertible {
    var description: String { "no answer within 2 seconds" }
}
