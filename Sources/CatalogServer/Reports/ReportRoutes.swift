import Hummingbird

extension CatalogResponder {
    /// Reports of identifiers an app's store did not know (docs/contract.md section 4).
    static let reportRoutes = RouteTable("reports", listener: .public, parameters: ["app": .appName], [reportRoute])

    /// Named apart: the lean path (``LeanPostHandler``) counts what it answers
    /// under its label.
    static let reportRoute = RouteSpec(
        "/v1/apps/{app}/invalid-identifiers", methods: [.post], metrics: "reports", answer: { await $0.receiveReport($1) })

    /// The answer, and the `reportId` a 202 stored the report under.
    func receiveReport(_ call: RouteCall) async -> RouteAnswer {
        guard let reports else { return RouteAnswer(JSONError.response(.serviceUnavailable, "this server does not store reports")) }
        let answer = await reports.respond(
            to: call.request, app: call.app, published: store.index.apps[call.app], peer: call.context.remoteAddress?.ipAddress,
            now: configuration.clock())
        return RouteAnswer(answer.response, reportID: answer.reportID)
    }
}

extension MetricsRoute {
    /// Reports, on either path.
    static let reports = CatalogResponder.reportRoute.metricsName
}
