import PropertyList

/// A failure whose cause is in the sources: the diagnostics say where, the description what.
public protocol DiagnosedError: Error {
    var diagnostics: [Diagnostic] { get }
}
