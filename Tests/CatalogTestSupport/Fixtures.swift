/// An Apple XML property list around `body`: the declaration, the DOCTYPE and `<plist>` take
/// lines 1–3, so the body's first line is line 4.
public func plist(_ body: String) -> String {
    """
    <?xml version="1.0" encoding="UTF-8"?>
    <!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" "http://www.apple.com/DTDs/PropertyList-1.0.dtd">
    <plist version="1.0">
    \(body)
    </plist>

    """
}

/// The issue's seed example: Apple's `product_ids.plist`, three identifiers in a root array.
public let seedCatalog = plist(
    """
    <array>
    \t<string>com.example.level1</string>
    \t<string>com.example.level2</string>
    \t<string>com.example.rocket_car</string>
    </array>
    """)

/// What the seed example publishes as `products.json`.
public let seedProductsJSON = #"["com.example.level1","com.example.level2","com.example.rocket_car"]"#
