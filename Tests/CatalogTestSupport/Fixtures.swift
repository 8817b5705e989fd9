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

/// An app `com.example.app` with purchase settings (`appAppleId`, `transferPolicy` `policy`, and
/// with `xcode` its Xcode certificate) and two products: a monthly subscription unlocking `pro`
/// in group `pro`, and a non-renewing pass of one month.
public func purchaseCatalog(policy: String = "keep", xcode: String? = nil) -> String {
    let xcodeSettings =
        xcode.map {
            "<key>environments</key><array><string>production</string><string>xcode</string></array><key>xcodeCertificate</key><string>\($0)</string>"
        } ?? ""
    return """
        <?xml version="1.0" encoding="UTF-8"?>
        <plist version="1.0"><dict><key>platforms</key><array><string>iOS</string></array>
        <key>appAppleId</key><integer>1234567890</integer>\(xcodeSettings)
        <key>transferPolicy</key><string>\(policy)</string>
        <key>products</key><array>
        <dict><key>id</key><string>com.example.app.pro.monthly</string><key>type</key><string>auto-renewable</string>
        <key>subscription</key><dict><key>group</key><string>pro</string><key>period</key><string>P1M</string></dict>
        <key>entitlements</key><array><string>pro</string></array></dict>
        <dict><key>id</key><string>com.example.app.pass</string><key>type</key><string>non-renewing</string>
        <key>duration</key><string>P1M</string></dict>
        </array></dict></plist>
        """
}
