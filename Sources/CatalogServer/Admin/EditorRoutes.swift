import Hummingbird

extension EditorAssets {
    /// The dashboard: `/editor` sends browsers to `/editor/`, and each of ``files`` is a route of
    /// its own, so that a new file is one entry there (and its path in `openapi.yaml`).
    static let routes = RouteTable(
        "dashboard", listener: .admin,
        [RouteSpec("/editor", .get, .head, metrics: "editor") { _, _ in redirect() }]
            + files.keys.sorted().map { name in
                RouteSpec("/editor/\(name)", .get, .head, metrics: "editor") { _, call in response(for: name, request: call.request) }
            })
}
