import CatalogKit
import CatalogTestSupport
import Foundation
import Testing

/// What the rule suites share. `validate(products:)` wraps product bodies in
/// `com.example.game.plist`: the first product's `<dict>` is at 7:3 and its body starts on line 8 at
/// column 4 (see `productsPlist`).
enum RuleFixtures {
    static let game = "catalog/com.example.game.plist"
}
