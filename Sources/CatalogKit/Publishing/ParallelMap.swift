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
///
/// `first()` runs on the caller's thread and `second()` on a queue of its own, not as the two
/// iterations of a `concurrentPerform`: Dispatch narrows an apply nested in another to the cores
/// the outer one leaves, so a ``parallelMap(_:_:)`` inside `first()` ran on one thread while the
/// other, done with `second()`, waited (docs/benchmarks.md, "The build on both cores").
func concurrently<First: Sendable, Second: Sendable>(
    _ first: () -> First, _ second: @escaping @Sendable () -> Second
) -> (First, Second) {
    let secondResult = ParallelResults<Second>(count: 1)
    defer { secondResult.buffer.deallocate() }
    let done = DispatchGroup()
    // A queue of its own gets a thread even when the shared pool's are busy or blocked.
    DispatchQueue(label: "catalog.concurrently").async(group: done) {
        secondResult.buffer.baseAddress!.initialize(to: second())
    }
    let firstResult = first()
    done.wait()
    return (firstResult, secondResult.buffer.baseAddress!.move())
}

/// A value made on a queue of its own from the moment this is made, and waited for where it is
/// needed: work that needs nothing else of its caller starts before the work it would otherwise
/// wait behind.
final class Aside<Value: Sendable>: @unchecked Sendable {
    /// Written once on the queue, read only after `done`.
    private var value: Value?
    private let done = DispatchGroup()

    init(_ make: @escaping @Sendable () -> Value) {
        DispatchQueue(label: "catalog.aside").async(group: done) { [self] in value = make() }
    }

    /// The value, once it is made.
    func get() -> Value {
        done.wait()
        return value!
    }
}

/// `range` cut into one part per core, in order, for ``parallelMap(_:_:)``.
func coreParts(of range: Range<Int>) -> [Range<Int>] {
    let parts = max(1, min(ProcessInfo.processInfo.activeProcessorCount, range.count))
    return (0..<parts).map { part in
        (range.lowerBound + range.count * part / parts)..<(range.lowerBound + range.count * (part + 1) / parts)
    }
}

/// `@unchecked Sendable`: each concurrent task initializes only its own slot of a preallocated
/// buffer, and the slots are read only after every task is done.
private final class ParallelResults<Output>: @unchecked Sendable {
    let buffer: UnsafeMutableBufferPointer<Output>
    init(count: Int) { buffer = .allocate(capacity: max(count, 1)) }
}
