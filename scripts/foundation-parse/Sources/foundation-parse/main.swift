// Usage: foundation-parse FILE.plist
// Reads FILE with Data(contentsOf:), parses it with
// PropertyListSerialization, and prints the number of products in the root
// dict's `products` array (so the parse cannot be optimized away).
import Foundation

let args = CommandLine.arguments
guard args.count == 2 else {
    FileHandle.standardError.write(Data("usage: foundation-parse FILE.plist\n".utf8))
    exit(64)
}

do {
    let data = try Data(contentsOf: URL(fileURLWithPath: args[1]))
    var format = PropertyListSerialization.PropertyListFormat.xml
    let root = try PropertyListSerialization.propertyList(from: data, options: [], format: &format)
    guard let dict = root as? [String: Any], let products = dict["products"] as? [Any] else {
        FileHandle.standardError.write(Data("foundation-parse: root is not a dict with a products array\n".utf8))
        exit(1)
    }
    print(products.count)
} catch {
    FileHandle.standardError.write(Data("foundation-parse: \(error)\n".utf8))
    exit(1)
}
