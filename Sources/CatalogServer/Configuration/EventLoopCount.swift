import Foundation
import NIOCore

/// How many event loops `catalog serve` runs: one per core the process may use.
///
/// NIO's `System.coreCount` counts the cgroup's CPU quota (rounded up) and its cpuset, but not the
/// affinity mask that `taskset` or systemd's `CPUAffinity=` set. With that mask alone narrower than
/// the cores it counts, two loops shared one allowed core: a connection waited for the other loop's
/// time slice (p90 latency 3.7 ms against 0.7 ms, and about a fifth more CPU per feed request, in
/// docs/benchmarks.md, "Two event loops on one core"). So the mask bounds the count too.
public enum EventLoopCount {
    /// The count for this process: the lesser of NIO's and the affinity mask's.
    public static var forThisProcess: Int {
        count(coreCount: System.coreCount, status: try? String(contentsOfFile: "/proc/self/status", encoding: .utf8))
    }

    /// The lesser of `coreCount` and the CPUs of the affinity mask in `status` (the text of
    /// /proc/self/status), at least one; `coreCount` when `status` names no mask.
    static func count(coreCount: Int, status: String?) -> Int {
        guard let allowed = status.flatMap(allowedCPUs) else { return max(1, coreCount) }
        return max(1, min(coreCount, allowed))
    }

    /// The CPUs in `Cpus_allowed_list: 0-1,4`, the affinity mask as /proc/self/status prints it
    /// (readable without C); nil when there is no such line or it names none.
    static func allowedCPUs(status: String) -> Int? {
        guard let line = status.split(separator: "\n").first(where: { $0.hasPrefix("Cpus_allowed_list:") }) else { return nil }
        var count = 0
        for range in line.dropFirst("Cpus_allowed_list:".count).split(separator: ",") {
            let bounds = range.split(separator: "-").map { Int($0.trimmingCharacters(in: .whitespaces)) }
            switch bounds.count {
            case 1: if bounds[0] != nil { count += 1 }
            case 2: if let low = bounds[0], let high = bounds[1], high >= low { count += high - low + 1 }
            default: continue
            }
        }
        return count > 0 ? count : nil
    }
}
