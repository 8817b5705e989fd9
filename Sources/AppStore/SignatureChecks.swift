import Foundation
import Ledger
import X509

/// How many signatures a verifier has checked, or handed to swift-certificates' chain builder to
/// check: what a refused piece of evidence costs, counted rather than timed, for the tests that keep
/// that cost down (issue 35).
final class SignatureCheckCounter: @unchecked Sendable {
    // @unchecked: `value` is only touched while `lock` is held.
    private let lock = NSLock()
    private var value = 0

    func add(_ count: Int) {
        lock.withLock { value += count }
    }

    var count: Int { lock.withLock { value } }
}

/// A certificate store that counts the candidates it hands out. The chain builder checks one
/// signature for each candidate issuer it is given (or skips it), so the count is a bound on the
/// signature checks a chain validation made.
struct CountingCertificateStore: CustomCertificateStore {
    var certificates: [Certificate]
    let counter: SignatureCheckCounter

    subscript(subject: DistinguishedName) -> [Certificate]? {
        get async {
            let found = certificates.filter { $0.subject == subject }
            counter.add(found.count)
            return found.isEmpty ? nil : found
        }
    }

    func contains(_ certificate: Certificate) async -> Bool {
        certificates.contains(certificate)
    }

    mutating func append(contentsOf certificates: some Sequence<Certificate>) {
        self.certificates.append(contentsOf: certificates)
    }

    static func == (left: Self, right: Self) -> Bool {
        left.certificates == right.certificates && left.counter === right.counter
    }

    func hash(into hasher: inout Hasher) {
        hasher.combine(certificates)
    }
}
