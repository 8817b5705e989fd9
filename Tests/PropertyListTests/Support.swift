import PropertyList

/// A source made of `text`, shown as `test.plist` in diagnostics.
func source(_ text: String, path: String = "test.plist") -> SourceFile {
    SourceFile(path: path, bytes: Array(text.utf8))
}

func plist(_ body: String) -> String {
    """
    <?xml version="1.0" encoding="UTF-8"?>
    <!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" "http://www.apple.com/DTDs/PropertyList-1.0.dtd">
    <plist version="1.0">
    \(body)
    </plist>
    """
}

func read(_ text: String, limits: ReaderLimits = ReaderLimits()) -> PropertyListReader.Result {
    PropertyListReader(limits: limits).read(source(text))
}

/// Diagnostics as printed, for exact comparisons.
func printed(_ result: PropertyListReader.Result) -> [String] {
    result.diagnostics.map(\.description)
}
