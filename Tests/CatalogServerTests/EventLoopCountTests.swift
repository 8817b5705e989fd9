import Testing

@testable import CatalogServer

/// The event loops `catalog serve` runs: NIO's count, bounded by the affinity mask that NIO does
/// not read (`taskset -c 0` on a 2-core machine ran two loops on one core before).
struct EventLoopCountTests {
    @Test(arguments: [("0", 1), ("0-1", 2), ("0-3,8", 5), ("2,4,6", 3), (" 0-7 ", 8)])
    func theMaskIsCounted(list: String, cpus: Int) {
        #expect(EventLoopCount.allowedCPUs(status: "Cpus_allowed_list:\t\(list)\n") == cpus)
    }

    @Test func aMaskNarrowerThanNIOsCountBoundsIt() {
        #expect(EventLoopCount.count(coreCount: 2, status: "Cpus_allowed_list:\t0\n") == 1)
        #expect(EventLoopCount.count(coreCount: 2, status: "Cpus_allowed_list:\t0-7\n") == 2, "a cgroup quota of 2 still bounds it")
    }

    @Test(arguments: [nil, "", "Name:\tcatalog\n", "Cpus_allowed_list:\t\n", "Cpus_allowed_list:\tx-y\n", "Cpus_allowed_list:\t3-1\n"])
    func withoutAReadableMaskNIOsCountStands(status: String?) {
        #expect(EventLoopCount.count(coreCount: 4, status: status) == 4)
        #expect(EventLoopCount.count(coreCount: 0, status: status) == 1, "never no loop")
    }
}
