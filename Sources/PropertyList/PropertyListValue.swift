import Time

/// A property-list value with the place in the source it came from.
public struct PropertyListNode: Sendable {
    public var value: PropertyListValue
    public var position: SourcePosition

    public init(_ value: PropertyListValue, at position: SourcePosition) {
        self.value = value
        self.position = position
    }
}

/// The value kinds of Apple's XML property-list format.
public enum PropertyListValue: Sendable {
    case string(String)
    case integer(Int64)
    case real(Double)
    case boolean(Bool)
    case date(Timestamp)
    case data([UInt8])
    case array([PropertyListNode])
    case dictionary(PropertyListDictionary)

    /// The element name of this kind, for messages such as "expected a string, found <integer>".
    public var kindName: String {
        switch self {
        case .string: "<string>"
        case .integer: "<integer>"
        case .real: "<real>"
        case .boolean: "<true/> or <false/>"
        case .date: "<date>"
        case .data: "<data>"
        case .array: "<array>"
        case .dictionary: "<dict>"
        }
    }
}

/// A `<dict>` in source order, keys unique (the reader rejects duplicates).
public struct PropertyListDictionary: Sendable {
    public struct Entry: Sendable {
        public var key: String
        public var keyPosition: SourcePosition
        public var value: PropertyListNode

        public init(key: String, keyPosition: SourcePosition, value: PropertyListNode) {
            self.key = key
            self.keyPosition = keyPosition
            self.value = value
        }
    }

    public var entries: [Entry]

    public init(entries: [Entry] = []) {
        self.entries = entries
    }

    public subscript(key: String) -> PropertyListNode? {
        entries.first { $0.key == key }?.value
    }
}
