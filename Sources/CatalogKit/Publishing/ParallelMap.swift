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

/// `first()` and `second()` at the same time, on two cores when there are two.
func concurrently<First: Sendable, Second: Sendable>(
    _ first: @Sendable () -> First, _ second: @Sendable () -> Second
) -> (First, Second) {
    let firstResult = ParallelResults<First>(count: 1)
    let secondResult = ParallelResults<Second>(count: 1)
    defer {
        firstResult.buffer.deallocate()
        secondResult.buffer.deallocate()
    }
    DispatchQueue.concurrentPerform(iterations: 2) { index in
        if index == 0 {
            firstResult.buffer.baseAddress!.initialize(to: first())
        } else {
            secondResult.buffer.baseAddress!.initialize(to: second())
        }
    }
    return (firstResult.buffer.baseAddress!.move(), secondResult.buffer.baseAddress!.move())
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
