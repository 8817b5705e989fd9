import Logging

/// What `catalog serve` logs and how (docs/operations.md, "Logs").
public struct LoggingConfiguration: Sendable {
    /// `text`: swift-log's stream format; `json`: ``JSONLogHandler``, one object per line.
    public enum Format: String, Sendable, CaseIterable {
        case text, json
    }

    /// The least level logged.
    public var level = Logger.Level.info
    /// The lines' format.
    public var format = Format.text
    /// The access log (its prefixes are the reports' network prefixes).
    public var accessLog = AccessLog()

    /// The defaults of `catalog serve`.
    public init() {}

    /// Sets the process's logging system up as configured; once, before the first logger is made.
    public func bootstrap() {
        let level = level
        switch format {
        case .text:
            LoggingSystem.bootstrap { label in
                var handler = StreamLogHandler.standardError(label: label)
                handler.logLevel = level
                return handler
            }
        case .json:
            LoggingSystem.bootstrap { label in
                var handler = JSONLogHandler(label: label)
                handler.logLevel = level
                return handler
            }
        }
    }
}
