import Foundation

/// The server's last answer for each customer this install presented purchases of, with the
/// evidence that got it: what ``CatalogClient/entitlements()`` merges,
/// ``CatalogClient/refreshEntitlements()`` presents again and a content list shows.
///
/// One customer is the usual case: an app that sets an app account token on its purchases has all of
/// them under that account. Several come from purchases that name no account: until an account
/// claims it, each such purchase is a customer of its own on the server (docs/purchases.md,
/// "Customers"), so a restore of an Apple account with two of them is answered by two customers. As
/// far as this install knows they are one person's, so their entitlements are merged. An answer for
/// another app account than the kept ones' (another `appAccountToken`: someone else signed in to the
/// app) replaces theirs, which this install must no longer grant; answers that name no account are
/// kept beside any.
struct KeptCustomers: Codable, Sendable {
    /// One customer as last answered.
    struct Entry: Codable, Sendable {
        /// When the answer arrived, by the device's clock, in milliseconds since 1970.
        var readAt: Int64
        /// The app account the presentation named (the token the transaction signs, else the one sent
        /// beside it), lower-cased; nil for none.
        var account: String?
        /// The request body the server accepted for this customer, to present again; nil for a
        /// customer known only from beside a refusal, whose evidence would only be refused again.
        var evidence: PurchaseOutbox.WirePurchase?
        /// The server's answer.
        var answer: WireCustomer
    }

    /// Oldest answer first.
    var entries: [Entry] = []

    /// At most this many customers are kept; the least recently answered go first.
    static let maximum = 20

    /// Keeps `entry` in place of the same customer's earlier answer.
    mutating func record(_ entry: Entry) {
        var entry = entry
        if let account = entry.account { entries.removeAll { $0.account != nil && $0.account != account } }
        if let index = entries.firstIndex(where: { $0.answer.customer == entry.answer.customer }) {
            // An answer beside a refusal brings no evidence: what was accepted before still names the customer.
            if entry.evidence == nil { entry.evidence = entries[index].evidence }
            entries.remove(at: index)
        }
        entries.append(entry)
        if entries.count > Self.maximum { entries.removeFirst(entries.count - Self.maximum) }
    }

    /// Every kept customer as one answer: their entitlements and keys together, credits summed (each
    /// customer's are other transactions), read at the oldest answer's time, so that
    /// ``CustomerEntitlements/age(at:)`` bounds every part of it; the customer number is the latest
    /// answer's. ``CustomerEntitlements/unknown`` when nothing is kept.
    func merged(source: CustomerEntitlements.Source, error: CatalogClientError?) -> CustomerEntitlements {
        let answers = entries.compactMap { $0.answer.entitlements(readAt: Self.date($0.readAt), source: source) }
        guard var merged = answers.last else {
            var unknown = CustomerEntitlements.unknown
            unknown.error = error
            return unknown
        }
        merged.error = error
        guard answers.count > 1 else { return merged }
        merged.entitlements = Self.unique(answers.flatMap(\.entitlements))
        merged.keys = Self.unique(answers.flatMap(\.keys))
        var credits: [CustomerEntitlements.Credit] = []
        for credit in answers.flatMap(\.credits) {
            if let index = credits.firstIndex(where: { $0.productId == credit.productId && $0.environment == credit.environment }) {
                credits[index].quantity += credit.quantity
            } else {
                credits.append(credit)
            }
        }
        merged.credits = credits
        merged.readAt = answers.compactMap(\.readAt).min()
        merged.serverTime = answers.compactMap(\.serverTime).min()
        return merged
    }

    /// The bodies to present for a content list, the latest answered first.
    var evidence: [PurchaseOutbox.WirePurchase] { entries.reversed().compactMap(\.evidence) }

    private static func unique<Element: Hashable>(_ elements: [Element]) -> [Element] {
        var seen = Set<Element>()
        return elements.filter { seen.insert($0).inserted }
    }

    static func date(_ milliseconds: Int64) -> Date { Date(timeIntervalSince1970: Double(milliseconds) / 1000) }

    static func milliseconds(_ date: Date) -> Int64 { Int64((date.timeIntervalSince1970 * 1000).rounded(.down)) }

    // MARK: On disk

    /// `customers.json` in `directory` (the purchases folder); before it existed, a client kept one
    /// answer (`entitlements.json`: the time it was read on a first line, then the answer) and the
    /// last accepted body (`evidence.json`), read here as one customer.
    static func load(from directory: URL) -> KeptCustomers {
        if let data = try? Data(contentsOf: file(in: directory)), let kept = try? JSONDecoder().decode(Self.self, from: data) {
            return kept
        }
        guard let file = try? Data(contentsOf: directory.appendingPathComponent(legacyAnswer)),
            let newline = file.firstIndex(of: UInt8(ascii: "\n")),
            let readAt = Int64(String(decoding: file[..<newline], as: UTF8.self)),
            let answer = try? JSONDecoder().decode(WireCustomer.self, from: file[file.index(after: newline)...])
        else { return KeptCustomers() }
        let evidence = (try? Data(contentsOf: directory.appendingPathComponent(legacyEvidence))).flatMap {
            try? JSONDecoder().decode(PurchaseOutbox.WirePurchase.self, from: $0)
        }
        return KeptCustomers(entries: [Entry(readAt: readAt, account: evidence?.account, evidence: evidence, answer: answer)])
    }

    /// Writes the whole set at once, then removes what a client kept before it.
    func save(in directory: URL) throws(CatalogClientError) {
        let data: Data
        do { data = try JSONEncoder().encode(self) } catch {
            throw CatalogClientError(code: .storage, message: "cannot encode the kept customers: \(error)")
        }
        try DurableFile.makeDirectory(directory)
        try DurableFile.write(data, to: Self.file(in: directory))
        for name in [Self.legacyAnswer, Self.legacyEvidence] {
            try? FileManager.default.removeItem(at: directory.appendingPathComponent(name))
        }
    }

    /// The bodies a content list presents: the kept customers' evidence, or an older client's
    /// `evidence.json` as it is.
    static func evidenceBodies(in directory: URL) -> [Data] {
        let bodies = load(from: directory).evidence.compactMap { try? JSONEncoder().encode($0) }
        if bodies.isEmpty, let legacy = try? Data(contentsOf: directory.appendingPathComponent(legacyEvidence)) { return [legacy] }
        return bodies
    }

    static func file(in directory: URL) -> URL { directory.appendingPathComponent("customers.json") }
    private static let legacyAnswer = "entitlements.json"
    private static let legacyEvidence = "evidence.json"
}
