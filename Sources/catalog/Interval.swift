import ArgumentParser
import CatalogKit

extension Interval: ExpressibleByArgument {
    public init?(argument: String) {
        self.init(argument)
    }

    public static var defaultCompletionKind: CompletionKind { .default }
}
