import Testing

@testable import CatalogServer

/// One event loop per CPU the process may really use: a container's CPU quota counts, not only
/// the affinity mask (two loops time-sharing one core's quota answer worse than one).
@Suite struct CPUCountTests {
    @Test(
        arguments: [
            ("200000 100000", 2), ("150000 100000", 2), ("50000 100000", 1), ("100000 100000\n", 1), ("max 100000", nil),
            ("-1 100000", nil), ("", nil), ("0 100000", nil), ("100000 0", nil), ("garbage", nil),
        ] as [(String, Int?)])
    func quotaInCPUs(cpuMax: String, cpus: Int?) {
        #expect(cpuQuota(cpuMax: cpuMax) == cpus)
    }
}
