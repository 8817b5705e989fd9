/// Bounds that keep a hostile or broken file from costing unbounded time or memory.
///
/// The defaults fit a catalog of several hundred thousand products while refusing
/// the shapes attacks use: very deep nesting, huge text nodes, endless elements.
public struct ReaderLimits: Sendable, Hashable {
    /// Largest file read, in bytes.
    public var maximumFileBytes: Int = 256 << 20
    /// Deepest element nesting.
    public var maximumDepth: Int = 64
    /// Most elements in one document.
    public var maximumElements: Int = 20_000_000
    /// Longest text of one element or attribute, in bytes.
    public var maximumTextBytes: Int = 1 << 20

    public init() {}
}
