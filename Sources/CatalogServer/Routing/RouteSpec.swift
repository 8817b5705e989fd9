import HTTPTypes
import Hummingbird

/// One route as its feature declares it in its ``RouteTable``: the path template as
/// `openapi.yaml` spells it, the methods it answers, the label it is counted under, and its
/// handler, each written once.
///
/// The rest follows from it: the matching (``RouteMatcher``), 405 with `Allow` for any other
/// method, which listener answers it, and the list that `OpenAPITests` holds against the
/// document. A handler is a call to a named function of its feature, so that the table reads as
/// the feature's map.
struct RouteSpec: Sendable {
    /// The handler: the response, and what the access log records beside it.
    typealias Answer = @Sendable (CatalogResponder, RouteCall) async -> RouteAnswer

    /// Literal segments and `{name}` parameters, each a whole segment, which the table's
    /// vocabulary must know (``PathParameter``).
    let template: String
    /// What the route answers; any other method is refused before the handler runs.
    let methods: [HTTPRequest.Method]
    /// The `route` label of `catalog_http_requests_total`; dashboards depend on its values.
    let metricsName: MetricsRoute
    /// nil: the table's.
    let listener: RouteListener?
    /// nil: the table's.
    let availability: RouteAvailability?
    let methodRefusal: MethodRefusal
    let answer: Answer

    /// A route whose handler answers a response.
    init(
        _ template: String, _ methods: HTTPRequest.Method..., metrics: MetricsRoute, listener: RouteListener? = nil,
        availability: RouteAvailability? = nil, methodRefusal: MethodRefusal = .usual,
        handler: @escaping @Sendable (CatalogResponder, RouteCall) async -> Response
    ) {
        self.init(
            template, methods: methods, metrics: metrics, listener: listener, availability: availability, methodRefusal: methodRefusal,
            answer: { RouteAnswer(await handler($0, $1)) })
    }

    /// A route whose handler also tells the access log something (``RouteAnswer``).
    init(
        _ template: String, methods: [HTTPRequest.Method], metrics: MetricsRoute, listener: RouteListener? = nil,
        availability: RouteAvailability? = nil, methodRefusal: MethodRefusal = .usual, answer: @escaping Answer
    ) {
        self.template = template
        self.methods = methods
        self.metricsName = metrics
        self.listener = listener
        self.availability = availability
        self.methodRefusal = methodRefusal
        self.answer = answer
    }
}

/// A request matched to a route: what its handler is given.
struct RouteCall: Sendable {
    let request: Request
    let context: CatalogRequestContext
    /// The template's parameters, each already checked (``PathParameter``).
    let parameters: PathParameters

    /// `{app}`, a bundle identifier.
    var app: String { parameters["app"] }
}

/// What a handler answers: the response, and for the access log the `reportId` a 202 stored a
/// report under.
struct RouteAnswer: Sendable {
    var response: Response
    var reportID: String?

    init(_ response: Response, reportID: String? = nil) {
        self.response = response
        self.reportID = reportID
    }
}

/// Which listener answers a route when `--admin-port` splits them (``ListenerRole``); with one
/// listener, it answers every route.
enum RouteListener: Sendable {
    /// Apps and their backends: feeds, reports, purchases, content.
    case `public`
    /// Editors and operators: the editor API, the dashboard, `/metrics`.
    case admin
    /// Both: health, readiness, the document.
    case both
}

/// Why a route cannot be answered on this server (its feature is not configured here): a 503 or
/// a 421, checked before the method, as each feature has always answered it.
struct RouteAvailability: Sendable {
    /// nil: the route can be answered.
    let refusal: @Sendable (CatalogResponder) -> Response?
}

/// How a route answers a method it does not list.
enum MethodRefusal: Sendable {
    /// 405 with `Allow` (``CatalogResponder/methodNotAllowed(_:allow:)``).
    case usual
    /// The handler answers every method and refuses the others itself, as it did before the
    /// tables: a content URL as the lean path refuses them, a lookup once its query is read.
    case byHandler
    /// An answer of the route's own for some methods, given the `Allow` value of its methods;
    /// nil: the usual.
    case own(@Sendable (Request, _ allow: String) -> Response?)
}
