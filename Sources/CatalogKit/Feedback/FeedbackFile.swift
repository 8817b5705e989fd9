import Foundation
import PropertyList
import Time

/// `catalog/<app>.feedback.plist`: the verdicts of the feedback loop on an app's identifiers,
/// and the identifiers editors released.
///
/// An Apple XML property list that editors read, diff and commit, so it is canonical: the same
/// verdicts always give the same bytes (identifiers sorted, keys in a fixed order), and a run
/// that changes nothing writes nothing.
///
/// ```
/// <dict>
///     <key>verdicts</key>
///     <dict>
///         <key>com.example.x</key>     status, reason, since, evidence (see docs/feedback.md)
///     </dict>
///     <key>released</key>
///     <dict>
///         <key>com.example.y</key>     <date> of the release
///     </dict>
///     <key>alert</key>                 only while the app has one: code, message, since
/// </dict>
/// ```
public struct FeedbackFile: Sendable, Hashable {
    /// The verdict on each judged identifier, by identifier.
    public var verdicts: [String: Verdict]
    /// When an editor last released each identifier: reports before that no longer count.
    public var released: [String: Timestamp]
    /// What the last run found wrong with the app as a whole; nil when nothing.
    public var alert: AppAlert?

    /// A file with these contents; empty by default.
    public init(verdicts: [String: Verdict] = [:], released: [String: Timestamp] = [:], alert: AppAlert? = nil) {
        self.verdicts = verdicts
        self.released = released
        self.alert = alert
    }

    /// Whether the file says nothing: no verdict, no release, no alert.
    public var isEmpty: Bool { verdicts.isEmpty && released.isEmpty && alert == nil }

    /// The identifiers taken off sale, with their reasons.
    public var quarantined: [String: String] {
        verdicts.filter { $0.value.status == .quarantined }.mapValues(\.reason)
    }

    /// The file name of `app`'s feedback, next to its sources.
    public static func name(for app: String) -> String {
        app + CatalogLoader.feedbackSuffix
    }

    /// Clears `identifier`'s verdict and records the release; nil (and no change) when it has none.
    public mutating func release(_ identifier: String, at moment: Timestamp) -> Verdict? {
        guard let verdict = verdicts.removeValue(forKey: identifier) else { return nil }
        released[identifier] = moment
        return verdict
    }

    /// Quarantines `identifier` by an editor's decision: a suspect's evidence and cause are kept.
    /// Returns the verdict it replaced, nil for an identifier with none.
    public mutating func confirmQuarantine(_ identifier: String, by editor: String, at moment: Timestamp) -> Verdict? {
        let before = verdicts[identifier]
        let reason = before.map { "confirmed by \(editor): \($0.reason)" } ?? "quarantined by \(editor)"
        verdicts[identifier] = Verdict(
            status: .quarantined, reason: reason, since: moment, evidence: before?.evidence, cause: before?.cause, confirmedBy: editor)
        return before
    }

    // MARK: - Writing

    /// The file's canonical bytes: an XML property list with identifiers sorted and keys in a fixed order.
    public var encoded: [UInt8] {
        var writer = PropertyListWriter()
        writer.comment("Written by 'catalog feedback'. Release an identifier with: catalog feedback release <app> <id>")
        writer.beginDictionary()
        writer.key("verdicts")
        writer.beginDictionary()
        for identifier in verdicts.keys.sorted() {
            writer.key(identifier)
            Self.write(verdicts[identifier]!, to: &writer)
        }
        writer.endDictionary()
        writer.key("released")
        writer.beginDictionary()
        for identifier in released.keys.sorted() {
            writer.key(identifier)
            writer.date(released[identifier]!)
        }
        writer.endDictionary()
        if let alert {
            writer.key("alert")
            writer.beginDictionary()
            writer.key("code")
            writer.string(alert.code.rawValue)
            writer.key("message")
            writer.string(alert.message)
            writer.key("since")
            writer.date(alert.since)
            writer.endDictionary()
        }
        writer.endDictionary()
        return writer.document
    }

    private static func write(_ verdict: Verdict, to writer: inout PropertyListWriter) {
        writer.beginDictionary()
        writer.key("status")
        writer.string(verdict.status.rawValue)
        writer.key("reason")
        writer.string(verdict.reason)
        writer.key("since")
        writer.date(verdict.since)
        if let cause = verdict.cause {
            writer.key("cause")
            writer.beginDictionary()
            writer.key("code")
            writer.string(cause.code.rawValue)
            writer.key("explanation")
            writer.string(cause.explanation)
            writer.endDictionary()
        }
        if verdict.awaitingEditor {
            writer.key("awaitingEditor")
            writer.boolean(true)
        }
        if let editor = verdict.confirmedBy {
            writer.key("confirmedBy")
            writer.string(editor)
        }
        if let evidence = verdict.evidence {
            writer.key("evidence")
            writer.beginDictionary()
            writer.key("countedFrom")
            writer.date(evidence.countedFrom)
            writer.key("reports")
            writer.integer(Int64(evidence.reports))
            writer.key("installs")
            writer.beginDictionary()
            for (name, count) in evidence.installs.nonZero {
                writer.key(name)
                writer.integer(Int64(count))
            }
            writer.endDictionary()
            if let rate = evidence.invalidRate {
                writer.key("invalidRate")
                writer.real(rate)
            }
            writer.key("firstSeen")
            writer.date(evidence.firstSeen)
            writer.key("lastSeen")
            writer.date(evidence.lastSeen)
            for (key, values) in [
                ("platforms", evidence.platforms), ("appVersions", evidence.appVersions), ("storefronts", evidence.storefronts),
            ] {
                writer.key(key)
                writer.beginArray()
                for value in values { writer.string(value) }
                writer.endArray()
            }
            writer.key("feedRevisions")
            writer.beginArray()
            for revision in evidence.feedRevisions { writer.integer(Int64(revision)) }
            writer.endArray()
            for (key, count) in [
                ("networks", evidence.networks), ("networkInstalls", evidence.networkInstalls),
                ("verifiedInstalls", evidence.verifiedInstalls),
            ] where count > 0 {
                writer.key(key)
                writer.integer(Int64(count))
            }
            writer.endDictionary()
        }
        writer.endDictionary()
    }

    /// Writes the file atomically, unless it already holds these bytes (or would be created
    /// empty); returns whether it wrote.
    @discardableResult
    public func write(to url: URL) throws -> Bool {
        let bytes = encoded
        if let existing = FileManager.default.contents(atPath: url.path) {
            if [UInt8](existing) == bytes { return false }
        } else if isEmpty {
            return false
        }
        try AtomicFile.write(bytes, to: url)
        return true
    }

    // MARK: - Reading

    /// What reading a feedback file found.
    public struct Read: Sendable {
        /// nil when the file has errors: callers must neither act on it nor overwrite it.
        public var file: FeedbackFile?
        /// Every problem found, errors and warnings, at its position.
        public var diagnostics: [Diagnostic]
        /// Where each verdict's identifier is written, for diagnostics about it.
        public var positions: [String: SourcePosition]
    }

    /// Reads `url` with the hardened plist reader; a missing file is an empty one.
    public static func read(_ url: URL, displayPath: String, limits: ReaderLimits = ReaderLimits()) -> Read {
        guard FileManager.default.fileExists(atPath: url.path) else { return Read(file: FeedbackFile(), diagnostics: [], positions: [:]) }
        let source: SourceFile
        switch SourceFile.read(url, displayPath: displayPath, limits: limits) {
        case .success(let file): source = file
        case .failure(let diagnostic): return Read(file: nil, diagnostics: [diagnostic], positions: [:])
        }
        if let problem = source.formatProblem() { return Read(file: nil, diagnostics: [problem], positions: [:]) }
        return decode(source, limits: limits)
    }

    /// Decodes a feedback file already in memory.
    public static func decode(_ source: SourceFile, limits: ReaderLimits = ReaderLimits()) -> Read {
        let result = PropertyListReader(limits: limits).read(source)
        var diagnostics = result.diagnostics
        var decoder = FeedbackFileDecoder(file: source.path)
        let decoded = result.root.flatMap { decoder.decode($0) }
        diagnostics += decoder.diagnostics
        diagnostics.sort()
        return Read(file: diagnostics.containsErrors ? nil : decoded, diagnostics: diagnostics, positions: decoder.positions)
    }
}

/// Turns a feedback file's plist into a ``FeedbackFile``, every problem a diagnostic: unknown
/// keys are warnings (editors may annotate), wrong kinds and missing keys errors.
private struct FeedbackFileDecoder {
    let file: String
    var diagnostics: [Diagnostic] = []
    var positions: [String: SourcePosition] = [:]

    init(file: String) {
        self.file = file
    }

    mutating func decode(_ root: PropertyListNode) -> FeedbackFile? {
        guard let entries = dictionary(root, what: "the root") else { return nil }
        var result = FeedbackFile()
        for entry in entries {
            switch entry.key {
            case "verdicts":
                for verdict in dictionary(entry.value, what: "'verdicts'") ?? [] {
                    positions[verdict.key] = verdict.keyPosition
                    if let decoded = self.verdict(verdict.value, identifier: verdict.key) { result.verdicts[verdict.key] = decoded }
                }
            case "released":
                for release in dictionary(entry.value, what: "'released'") ?? [] {
                    if let moment = release.value.date(key: release.key, file: file, into: &diagnostics) {
                        result.released[release.key] = moment.value
                    }
                }
            case "alert":
                result.alert = alert(entry.value)
            default:
                warnUnknown(entry)
            }
        }
        return result
    }

    private mutating func verdict(_ node: PropertyListNode, identifier: String) -> Verdict? {
        guard let entries = dictionary(node, what: "the verdict on '\(identifier)'") else { return nil }
        var status: Verdict.Status?
        var reason: String?
        var since: Timestamp?
        var evidence: VerdictEvidence?
        var cause: ProbableCause?
        var awaitingEditor = false
        var confirmedBy: String?
        for entry in entries {
            switch entry.key {
            case "status":
                guard let text = entry.value.string(key: "status", file: file, into: &diagnostics) else { break }
                status = Verdict.Status(rawValue: text.value)
                if status == nil {
                    diagnostics.append(
                        .error("unknown status '\(text.value)'; expected suspect or quarantined", file: file, at: text.position))
                }
            case "reason": reason = entry.value.string(key: "reason", file: file, into: &diagnostics)?.value
            case "since": since = entry.value.date(key: "since", file: file, into: &diagnostics)?.value
            case "evidence": evidence = self.evidence(entry.value, identifier: identifier)
            case "cause": cause = self.cause(entry.value)
            case "awaitingEditor":
                awaitingEditor = entry.value.boolean(key: "awaitingEditor", file: file, into: &diagnostics)?.value ?? false
            case "confirmedBy": confirmedBy = entry.value.string(key: "confirmedBy", file: file, into: &diagnostics)?.value
            default: warnUnknown(entry)
            }
        }
        for (key, missing) in [("status", status == nil), ("reason", reason == nil), ("since", since == nil)] where missing {
            if !entries.contains(where: { $0.key == key }) {
                diagnostics.append(.error("the verdict on '\(identifier)' has no '\(key)'", file: file, at: node.position))
            }
        }
        guard let status, let reason, let since else { return nil }
        return Verdict(
            status: status, reason: reason, since: since, evidence: evidence, cause: cause, awaitingEditor: awaitingEditor,
            confirmedBy: confirmedBy)
    }

    /// `code` and `explanation`; an unknown code is an error (tools switch on it).
    private mutating func cause(_ node: PropertyListNode) -> ProbableCause? {
        guard let fields = strings(node, what: "'cause'", keys: ["code", "explanation"]) else { return nil }
        guard let code = ProbableCause.Code(rawValue: fields["code"]!.value) else {
            let known = ProbableCause.Code.allCases.map(\.rawValue).joined(separator: ", ")
            diagnostics.append(
                .error("unknown cause '\(fields["code"]!.value)'; expected one of \(known)", file: file, at: fields["code"]!.position))
            return nil
        }
        return ProbableCause(code, fields["explanation"]!.value)
    }

    private mutating func alert(_ node: PropertyListNode) -> AppAlert? {
        guard let entries = dictionary(node, what: "'alert'") else { return nil }
        let since = entries.first { $0.key == "since" }.flatMap { $0.value.date(key: "since", file: file, into: &diagnostics) }
        guard let fields = strings(node, what: "'alert'", keys: ["code", "message"], ignoring: ["since"]), let since else {
            if !entries.contains(where: { $0.key == "since" }) {
                diagnostics.append(.error("'alert' has no 'since'", file: file, at: node.position))
            }
            return nil
        }
        guard let code = AppAlert.Code(rawValue: fields["code"]!.value) else {
            diagnostics.append(.error("unknown alert '\(fields["code"]!.value)'", file: file, at: fields["code"]!.position))
            return nil
        }
        return AppAlert(code: code, message: fields["message"]!.value, since: since.value)
    }

    /// A dict of the string members `keys`, all required; other keys (but `ignoring`) are warnings.
    private mutating func strings(
        _ node: PropertyListNode, what: String, keys: [String], ignoring: Set<String> = []
    ) -> [String: Located<String>]? {
        guard let entries = dictionary(node, what: what) else { return nil }
        var fields: [String: Located<String>] = [:]
        for entry in entries {
            if keys.contains(entry.key) {
                fields[entry.key] = entry.value.string(key: entry.key, file: file, into: &diagnostics)
            } else if !ignoring.contains(entry.key) {
                warnUnknown(entry)
            }
        }
        for key in keys where fields[key] == nil && !entries.contains(where: { $0.key == key }) {
            diagnostics.append(.error("\(what) has no '\(key)'", file: file, at: node.position))
        }
        return keys.allSatisfy({ fields[$0] != nil }) ? fields : nil
    }

    private mutating func evidence(_ node: PropertyListNode, identifier: String) -> VerdictEvidence? {
        guard let entries = dictionary(node, what: "'evidence'") else { return nil }
        var dates: [String: Timestamp] = [:]
        var reports: Int?
        var installs = InstallCounts()
        var rate: Double?
        var lists: [String: [String]] = [:]
        var revisions: [Int] = []
        var counts: [String: Int] = [:]
        for entry in entries {
            switch entry.key {
            case "countedFrom", "firstSeen", "lastSeen":
                dates[entry.key] = entry.value.date(key: entry.key, file: file, into: &diagnostics)?.value
            case "reports":
                reports = entry.value.integer(key: "reports", file: file, into: &diagnostics).map { Int($0.value) }
            case "networks", "networkInstalls", "verifiedInstalls":
                counts[entry.key] = entry.value.integer(key: entry.key, file: file, into: &diagnostics).map { Int($0.value) }
            case "installs":
                for count in dictionary(entry.value, what: "'installs'") ?? [] {
                    guard let number = count.value.integer(key: count.key, file: file, into: &diagnostics) else { continue }
                    switch count.key {
                    case "production": installs.production = Int(number.value)
                    case "sandbox": installs.sandbox = Int(number.value)
                    case "xcode": installs.xcode = Int(number.value)
                    case "unspecified": installs.unspecified = Int(number.value)
                    default: warnUnknown(count)
                    }
                }
            case "invalidRate":
                switch entry.value.value {
                case .real(let value) where (0...1).contains(value): rate = value
                case .integer(let value) where (0...1).contains(value): rate = Double(value)
                default:
                    diagnostics.append(
                        .error("'invalidRate' must be a <real> between 0 and 1", file: file, at: entry.value.position))
                }
            case "platforms", "appVersions", "storefronts":
                lists[entry.key] = entry.value.stringArray(key: entry.key, file: file, into: &diagnostics)?.value.map(\.value)
            case "feedRevisions":
                guard case .array(let items) = entry.value.value else {
                    diagnostics.append(
                        .error(
                            "'feedRevisions' must be an <array> of integers, found \(entry.value.value.kindName)", file: file,
                            at: entry.value.position))
                    break
                }
                revisions = items.compactMap { $0.integer(key: "feedRevisions", file: file, into: &diagnostics).map { Int($0.value) } }
            default:
                warnUnknown(entry)
            }
        }
        for key in ["countedFrom", "reports", "firstSeen", "lastSeen"] where !entries.contains(where: { $0.key == key }) {
            diagnostics.append(.error("the evidence on '\(identifier)' has no '\(key)'", file: file, at: node.position))
        }
        guard let countedFrom = dates["countedFrom"], let firstSeen = dates["firstSeen"], let lastSeen = dates["lastSeen"],
            let reports
        else { return nil }
        return VerdictEvidence(
            countedFrom: countedFrom, reports: reports, installs: installs, invalidRate: rate, firstSeen: firstSeen, lastSeen: lastSeen,
            platforms: lists["platforms"] ?? [], appVersions: lists["appVersions"] ?? [], storefronts: lists["storefronts"] ?? [],
            feedRevisions: revisions, networks: counts["networks"] ?? 0, networkInstalls: counts["networkInstalls"] ?? 0,
            verifiedInstalls: counts["verifiedInstalls"] ?? 0)
    }

    private mutating func dictionary(_ node: PropertyListNode, what: String) -> [PropertyListDictionary.Entry]? {
        guard case .dictionary(let dictionary) = node.value else {
            diagnostics.append(.error("\(what) must be a <dict>, found \(node.value.kindName)", file: file, at: node.position))
            return nil
        }
        return dictionary.entries
    }

    private mutating func warnUnknown(_ entry: PropertyListDictionary.Entry) {
        diagnostics.append(.warning("unknown key '\(entry.key)' is ignored", file: file, at: entry.keyPosition))
    }
}
