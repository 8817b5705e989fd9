/// Finds the route of a request path among every feature's tables.
///
/// Hummingbird's router was the alternative; matching here keeps what it does not give: 405 with
/// `Allow` for a known path and a wrong method, JSON errors everywhere, parameters checked
/// before anything is looked up (``PathParameter``), and routes kept apart by listener.
/// Candidates are grouped by segment count; a candidate's literal segments are compared first,
/// as most fail there, and only the one that passes has its parameters checked. Where two
/// templates could take the same path (`customers/lookup`, `customers/{id}`), the one with a
/// literal segment where the other has a parameter comes first.
struct RouteMatcher: Sendable {
    /// In table order.
    let routes: [Route]
    /// Index: the number of segments.
    private let candidates: [[Route]]

    init(_ tables: [RouteTable]) {
        routes = tables.flatMap(\.routes)
        var shapes = Set<String>()
        for route in routes {
            precondition(shapes.insert(route.shape).inserted, "two routes answer \(route.shape)")
        }
        var candidates = [[Route]](repeating: [], count: (routes.map(\.segments.count).max() ?? 0) + 1)
        for route in routes { candidates[route.segments.count].append(route) }
        // Stable: routes of one shape of literals and parameters keep their table order.
        self.candidates = candidates.map { group in
            group.enumerated().sorted { a, b in
                let (left, right) = (a.element.segments.map(\.isParameter), b.element.segments.map(\.isParameter))
                return left == right ? a.offset < b.offset : left.lexicographicallyPrecedes(right) { !$0 && $1 }
            }.map(\.element)
        }
    }

    /// The route that answers `path` (no query), with its parameters; nil: none does.
    func match(_ path: String) -> (route: Route, parameters: PathParameters)? {
        let segments = Self.segments(of: path)
        guard segments.count < candidates.count else { return nil }
        candidates: for route in candidates[segments.count] {
            for (segment, part) in zip(segments, route.segments) {
                if case .literal(let literal) = part, segment != literal { continue candidates }
            }
            var parameters: [(name: String, value: String)] = []
            for (segment, part) in zip(segments, route.segments) {
                guard case .parameter(let name, let parameter) = part else { continue }
                let value = String(segment)
                guard parameter.accepts(value) else { continue candidates }
                parameters.append((name, value))
            }
            return (route, PathParameters(parameters))
        }
        return nil
    }

    /// The route declared with `template`, exactly.
    func route(template: String) -> Route? {
        routes.first { $0.template == template }
    }

    /// The segments after the leading `/`: `/v1/apps` is `v1`, `apps`; empty segments count
    /// (`/editor/` is `editor`, ``), so that a trailing slash is another path.
    static func segments(of path: String) -> ArraySlice<Substring> {
        path.split(separator: "/", omittingEmptySubsequences: false).dropFirst()
    }
}

extension Route.Segment {
    fileprivate var isParameter: Bool {
        if case .parameter = self { true } else { false }
    }
}
