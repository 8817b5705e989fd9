import Foundation

/// Maps on all cores: rendering and compressing feeds is the costly part of a big build.
func parallelMap<Input: Sendable, Output: Sendable>(_ inputs: [Input], _ transform: @Sendable (Input) -> Output) -> [Output] {
    let results = ParallelResults<Output>(count: inputs.count)
    defer { results.buffer.deallocate() }
    DispatchQueue.concurrentPerform(iterations: inputs.count) { index in
        (results.buffer.baseAddress! + index).initialize(to: transform(inputs[index]))
    }
    return (0..<inputs.count).map { (results.buffer.baseAddress! + $0).move() }
}

/// `range` cut into one part per core, in order, for ``parallelMap(_:_:)``.
func coreParts(of range: Range<Int>) -> [Range<Int>] {
    let parts = max(1, min(ProcessInfo.processInfo.activeProcessorCount, range.count))
    return (0..<parts).map { part in
        (range.lowerBound + range.count * part / parts)..<(range.lowerBound + range.count * (part + 1) / parts)
    }
}

/// `@unchecked Sendable`: each concurrentPerform iteration initializes only its own slot of a
/// preallocated buffer, and the slots are read only after concurrentPerform has returned.
private final class ParallelResults<Output>: @unchecked Sendable {
    let buffer: UnsafeMutableBufferPointer<Output>
    init(count: Int) { buffer = .allocate(capacity: max(count, 1)) }
}
