import HTTPTypes
import Hummingbird

/// A feature's routes, declared in one place, as a Hummingbird controller returns its
/// `RouteCollection`: adding a route is one ``RouteSpec`` here plus its handler.
///
/// The table gives its routes what they share: the listener that answers them, the parameters
/// their templates may use and how each is checked, and what makes them unavailable on a
/// server that lacks the feature. A route may say otherwise for itself.
struct RouteTable: Sendable {
    /// For messages and tests: `feeds`, `purchases`, …
    let feature: String
    let routes: [Route]

    /// - Parameters:
    ///   - parameters: every `{name}` the templates use, with its check.
    ///   - availability: nil: the feature is always there.
    init(
        _ feature: String, listener: RouteListener, parameters: [String: PathParameter] = [:],
        availability: RouteAvailability? = nil, _ specs: [RouteSpec]
    ) {
        self.feature = feature
        routes = specs.map { spec in
            Route(
                template: spec.template, segments: Route.segments(of: spec.template, parameters: parameters, feature: feature),
                methods: spec.methods, metricsName: spec.metricsName, listener: spec.listener ?? listener,
                availability: spec.availability ?? availability, methodRefusal: spec.methodRefusal, answer: spec.answer)
        }
    }
}

/// A route as the server answers it: its spec with its table's defaults, its template parsed.
///
/// A class: a match hands one reference on rather than copying every field.
final class Route: Sendable {
    /// One segment of a template.
    enum Segment: Sendable {
        case literal(String)
        case parameter(name: String, PathParameter)
    }

    let template: String
    let segments: [Segment]
    let methods: [HTTPRequest.Method]
    /// `methods` as `Allow` lists them.
    let allow: String
    let metricsName: MetricsRoute
    let listener: RouteListener
    let availability: RouteAvailability?
    let methodRefusal: MethodRefusal
    let answer: RouteSpec.Answer

    init(
        template: String, segments: [Segment], methods: [HTTPRequest.Method], metricsName: MetricsRoute, listener: RouteListener,
        availability: RouteAvailability?, methodRefusal: MethodRefusal, answer: @escaping RouteSpec.Answer
    ) {
        self.template = template
        self.segments = segments
        self.methods = methods
        allow = methods.map(\.rawValue).joined(separator: ", ")
        self.metricsName = metricsName
        self.listener = listener
        self.availability = availability
        self.methodRefusal = methodRefusal
        self.answer = answer
    }

    /// The answer to `call`: unavailable first, then a method the route does not list, then the
    /// handler's.
    func respond(_ responder: CatalogResponder, to call: RouteCall) async -> RouteAnswer {
        if let refusal = availability?.refusal(responder) { return RouteAnswer(refusal) }
        guard methods.contains(call.request.method) else {
            switch methodRefusal {
            case .usual: break
            case .byHandler: return await answer(responder, call)
            case .own(let refuse): if let refusal = refuse(call.request, allow) { return RouteAnswer(refusal) }
            }
            return RouteAnswer(CatalogResponder.methodNotAllowed(call.request, allow: allow))
        }
        return await answer(responder, call)
    }

    /// `template`'s segments after the leading `/`, as request paths are split
    /// (``RouteMatcher/segments(of:)``).
    static func segments(of template: String, parameters: [String: PathParameter], feature: String) -> [Segment] {
        RouteMatcher.segments(of: template).map { segment in
            guard segment.first == "{", segment.last == "}" else {
                precondition(!segment.contains("{") && !segment.contains("}"), "\(template): a parameter is a whole segment")
                return .literal(String(segment))
            }
            let name = String(segment.dropFirst().dropLast())
            guard let parameter = parameters[name] else { preconditionFailure("\(template): the \(feature) table has no {\(name)}") }
            return .parameter(name: name, parameter)
        }
    }

    /// The template with its parameters' names left out (`/v1/apps/{}/products.json`): two
    /// routes of the same shape would answer the same paths.
    var shape: String {
        "/"
            + segments.map { segment in
                switch segment {
                case .literal(let text): text
                case .parameter: "{}"
                }
            }.joined(separator: "/")
    }
}
