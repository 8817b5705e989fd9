import Foundation
import PropertyList

/// The rules of the purchase fields (docs/catalog-format.md): a product's `entitlements`, and the app
/// settings (`appAppleId`, `environments`, `transferPolicy`, `xcodeCertificate`, the webhook's,
/// `sandboxUnlocks` and `requireDeviceId`), which may sit in any one file of a folder app, like the
/// other settings.
struct PurchaseSettingsRules {
    private var appAppleId: (Located<Int64>, file: String)?
    private var environments: (Located<[Located<String>]>, file: String)?
    private var transferPolicy: (Located<String>, file: String)?
    private var xcodeCertificate: (Located<String>, file: String)?
    private var webhookURL: (Located<String>, file: String)?
    private var webhookSecretFile: (Located<String>, file: String)?
    private var serverAPIKeyId: (Located<String>, file: String)?
    private var serverAPIIssuerId: (Located<String>, file: String)?
    private var serverAPIKeyFile: (Located<String>, file: String)?
    private var answerConsumptionRequests: (Located<Bool>, file: String)?
    private var sampleContentProvided: (Located<Bool>, file: String)?
    private var refundPreference: (Located<String>, file: String)?
    private var sandboxUnlocks: (Located<Bool>, file: String)?
    private var requireDeviceId: (Located<Bool>, file: String)?
    private var playPackageName: (Located<String>, file: String)?
    private var playLicenseKey: (Located<String>, file: String)?
    private var playPushAudience: (Located<String>, file: String)?
    private var playPushServiceAccount: (Located<String>, file: String)?
    private var playServiceAccountKeyFile: (Located<String>, file: String)?

    /// Whether any purchase setting is written: the app takes purchases.
    var isSet: Bool {
        appAppleId != nil || environments != nil || transferPolicy != nil || xcodeCertificate != nil || sandboxUnlocks != nil
            || requireDeviceId != nil || playPackageName != nil
    }

    /// Notes one file's settings; a setting already set by an earlier file is an error there.
    mutating func read(_ settings: AppSettingsDefinition, into diagnostics: inout [Diagnostic]) {
        let file = settings.file
        func note<Value>(_ value: Located<Value>?, _ key: String, _ slot: inout (Located<Value>, file: String)?) {
            guard let value else { return }
            if let earlier = slot {
                diagnostics.append(
                    .error(
                        "\(key) is already set at \(SourceLocation(file: earlier.file, position: earlier.0.position))", file: file,
                        at: value.position))
            } else {
                slot = (value, file)
            }
        }
        note(settings.appAppleId, "appAppleId", &appAppleId)
        note(settings.environments, "environments", &environments)
        note(settings.transferPolicy, "transferPolicy", &transferPolicy)
        note(settings.xcodeCertificate, "xcodeCertificate", &xcodeCertificate)
        note(settings.webhookURL, "webhookURL", &webhookURL)
        note(settings.webhookSecretFile, "webhookSecretFile", &webhookSecretFile)
        note(settings.serverAPIKeyId, "serverAPIKeyId", &serverAPIKeyId)
        note(settings.serverAPIIssuerId, "serverAPIIssuerId", &serverAPIIssuerId)
        note(settings.serverAPIKeyFile, "serverAPIKeyFile", &serverAPIKeyFile)
        note(settings.answerConsumptionRequests, "answerConsumptionRequests", &answerConsumptionRequests)
        note(settings.sampleContentProvided, "sampleContentProvided", &sampleContentProvided)
        note(settings.refundPreference, "refundPreference", &refundPreference)
        note(settings.sandboxUnlocks, "sandboxUnlocks", &sandboxUnlocks)
        note(settings.requireDeviceId, "requireDeviceId", &requireDeviceId)
        note(settings.playPackageName, "playPackageName", &playPackageName)
        note(settings.playLicenseKey, "playLicenseKey", &playLicenseKey)
        note(settings.playPushAudience, "playPushAudience", &playPushAudience)
        note(settings.playPushServiceAccount, "playPushServiceAccount", &playPushServiceAccount)
        note(settings.playServiceAccountKeyFile, "playServiceAccountKeyFile", &playServiceAccountKeyFile)
    }

    /// Checks the settings read, and fills in the defaults.
    func check(into diagnostics: inout [Diagnostic]) -> PurchaseSettings {
        var result = PurchaseSettings()
        if let (id, file) = appAppleId {
            if id.value < 1 {
                diagnostics.append(
                    .error("appAppleId must be 1 or more (the app's Apple id in App Store Connect)", file: file, at: id.position))
            } else {
                result.appAppleId = id.value
            }
        }
        if let (path, file) = xcodeCertificate {
            if path.value.allSatisfy(\.isWhitespace) {
                diagnostics.append(
                    .error("xcodeCertificate is empty; give the path of the certificate exported from Xcode", file: file, at: path.position)
                )
            } else {
                result.xcodeCertificate = path.value
            }
        }
        if let (list, file) = environments {
            var accepted: [PurchaseEnvironment] = []
            for name in list.value {
                guard let environment = PurchaseEnvironment(rawValue: name.value) else {
                    diagnostics.append(
                        .error(
                            "unknown environment '\(name.value)'; expected \(PurchaseEnvironment.expectedList)", file: file,
                            at: name.position))
                    continue
                }
                if accepted.contains(environment) {
                    diagnostics.append(.warning("environment '\(name.value)' is listed twice", file: file, at: name.position))
                    continue
                }
                accepted.append(environment)
            }
            if list.value.isEmpty {
                diagnostics.append(
                    .error("environments list is empty; leave it out to accept production and sandbox", file: file, at: list.position))
            }
            // Xcode's evidence is signed by the developer's own certificate: without it named, the
            // only way to accept it would be to skip the signature check, which is never done.
            if accepted.contains(.xcode), xcodeCertificate == nil {
                diagnostics.append(
                    .error(
                        "environment 'xcode' needs xcodeCertificate, the certificate exported from Xcode that signs its evidence",
                        file: file, at: list.position))
            }
            result.environments = accepted
        }
        if let (path, file) = xcodeCertificate, !result.environments.contains(.xcode) {
            diagnostics.append(
                .warning("xcodeCertificate is set but environments does not list 'xcode'; it is not used", file: file, at: path.position))
        }
        if let (text, file) = transferPolicy {
            if let policy = TransferPolicy(rawValue: text.value) {
                result.transferPolicy = policy
            } else {
                diagnostics.append(
                    .error("unknown transferPolicy '\(text.value)'; expected \(TransferPolicy.expectedList)", file: file, at: text.position)
                )
            }
        }
        if let (flag, _) = sandboxUnlocks { result.sandboxUnlocks = flag.value }
        if let (flag, _) = requireDeviceId { result.requireDeviceId = flag.value }
        checkWebhook(&result, into: &diagnostics)
        result.serverAPI = checkServerAPI(into: &diagnostics)
        result.consumption = checkConsumption(hasServerAPI: result.serverAPI != nil, into: &diagnostics)
        result.play = checkPlay(into: &diagnostics)
        return result
    }

    /// Google Play's settings: the package name as Android spells one; the licence key base64 of a
    /// DER structure (the server reads it as an RSA key, `catalog playstore key` checks it whole);
    /// the push audience and service account both or neither. Each needs the package name.
    private func checkPlay(into diagnostics: inout [Diagnostic]) -> PlaySettings? {
        var valid = true
        func error(_ message: String, _ slot: (Located<String>, file: String)) {
            diagnostics.append(.error(message, file: slot.file, at: slot.0.position))
            valid = false
        }
        guard let package = playPackageName else {
            for (name, slot) in [
                ("playLicenseKey", playLicenseKey), ("playPushAudience", playPushAudience),
                ("playPushServiceAccount", playPushServiceAccount), ("playServiceAccountKeyFile", playServiceAccountKeyFile),
            ] {
                if let slot { error("\(name) needs playPackageName, the app's package name on Google Play", slot) }
            }
            return nil
        }
        if !PlayRules.isPackageName(package.0.value) {
            error(
                "playPackageName '\(package.0.value)' is not an Android package name (two or more dot-separated parts, each a letter then letters, digits or '_')",
                package)
        }
        if let key = playLicenseKey {
            let text = key.0.value.filter { !$0.isWhitespace }
            if let bytes = Data(base64Encoded: text), bytes.first == 0x30, bytes.count >= 256 {
                // A 2048-bit key's SubjectPublicKeyInfo is 294 bytes; what it holds is read by the server.
            } else {
                error("playLicenseKey is not a licence key: Play Console shows it as base64 of an RSA public key (MIIBIjAN…)", key)
            }
        }
        switch (playPushAudience, playPushServiceAccount) {
        case (let audience?, nil):
            error("playPushAudience needs playPushServiceAccount: a push is accepted from that account only", audience)
        case (nil, let account?): error("playPushServiceAccount needs playPushAudience, the push subscription's audience", account)
        case (let audience?, let account?):
            if audience.0.value.allSatisfy(\.isWhitespace) { error("playPushAudience is empty", audience) }
            let parts = account.0.value.split(separator: "@", omittingEmptySubsequences: false)
            if parts.count != 2 || parts[0].isEmpty || !parts[1].contains(".") {
                error("playPushServiceAccount '\(account.0.value)' is not a service account's email address", account)
            }
        case (nil, nil): break
        }
        if let path = playServiceAccountKeyFile, path.0.value.allSatisfy(\.isWhitespace) {
            error("playServiceAccountKeyFile is empty; give the path of the service account's JSON key file", path)
        }
        guard valid else { return nil }
        return PlaySettings(
            packageName: package.0.value, licenseKey: playLicenseKey.map { $0.0.value.filter { !$0.isWhitespace } },
            pushAudience: playPushAudience?.0.value, pushServiceAccount: playPushServiceAccount?.0.value,
            serviceAccountKeyFile: playServiceAccountKeyFile?.0.value)
    }

    /// The consumption answers: on only when `answerConsumptionRequests` is true, which needs the
    /// API's key; the two others are said of the answers, and warned about when nothing is answered.
    private func checkConsumption(hasServerAPI: Bool, into diagnostics: inout [Diagnostic]) -> ConsumptionSettings? {
        var preference: ConsumptionSettings.RefundPreference?
        if let (text, file) = refundPreference {
            preference = ConsumptionSettings.RefundPreference(rawValue: text.value)
            if preference == nil {
                diagnostics.append(
                    .error(
                        "unknown refundPreference '\(text.value)'; expected \(ConsumptionSettings.RefundPreference.expectedList)",
                        file: file, at: text.position))
            }
        }
        guard let (answer, file) = answerConsumptionRequests, answer.value else {
            for (name, position, file) in [
                sampleContentProvided.map { ("sampleContentProvided", $0.0.position, $0.file) },
                refundPreference.map { ("refundPreference", $0.0.position, $0.file) },
            ].compactMap({ $0 }) {
                diagnostics.append(
                    .warning("\(name) is set but answerConsumptionRequests is not true; it is not used", file: file, at: position))
            }
            return nil
        }
        guard hasServerAPI else {
            diagnostics.append(
                .error(
                    "answerConsumptionRequests needs serverAPIKeyId, serverAPIIssuerId and serverAPIKeyFile: answers go through the App Store Server API",
                    file: file, at: answer.position))
            return nil
        }
        return ConsumptionSettings(sampleContentProvided: sampleContentProvided?.0.value ?? false, refundPreference: preference)
    }

    /// The App Store Server API's three settings: all or none, none empty; the key id as App Store
    /// Connect shows it (ten upper-case letters and digits), the issuer id a UUID. A key file that
    /// cannot be read is the server's to report when it calls: the file lives on its machine.
    private func checkServerAPI(into diagnostics: inout [Diagnostic]) -> ServerAPISettings? {
        let named = [("serverAPIKeyId", serverAPIKeyId), ("serverAPIIssuerId", serverAPIIssuerId), ("serverAPIKeyFile", serverAPIKeyFile)]
        let written = named.compactMap { name, slot in slot.map { (name, $0) } }
        guard let (_, first) = written.first else { return nil }
        var valid = true
        if written.count < 3 {
            let missing = named.filter { $0.1 == nil }.map(\.0).joined(separator: " and ")
            diagnostics.append(
                .error(
                    "\(written.map(\.0).joined(separator: " and ")) needs \(missing): the App Store Server API takes all three",
                    file: first.file, at: first.0.position))
            valid = false
        }
        for (name, (value, file)) in written where value.value.allSatisfy(\.isWhitespace) {
            diagnostics.append(.error("\(name) is empty", file: file, at: value.position))
            valid = false
        }
        if let (id, file) = serverAPIKeyId, !id.value.isEmpty,
            !(id.value.utf8.count == 10 && id.value.utf8.allSatisfy { (0x30...0x39).contains($0) || (0x41...0x5A).contains($0) })
        {
            diagnostics.append(
                .error(
                    "serverAPIKeyId '\(id.value)' is not a key id as App Store Connect shows it (ten upper-case letters and digits)",
                    file: file, at: id.position))
            valid = false
        }
        if let (issuer, file) = serverAPIIssuerId, !issuer.value.isEmpty, UUID(uuidString: issuer.value) == nil {
            diagnostics.append(
                .error(
                    "serverAPIIssuerId '\(issuer.value)' is not an issuer id (a UUID, from the keys page of App Store Connect)",
                    file: file, at: issuer.position))
            valid = false
        }
        guard valid, let keyId = serverAPIKeyId?.0.value, let issuerId = serverAPIIssuerId?.0.value,
            let keyFile = serverAPIKeyFile?.0.value
        else { return nil }
        return ServerAPISettings(keyId: keyId, issuerId: issuerId, keyFile: keyFile)
    }

    /// `webhookURL`: absolute, https (http only to a loopback host, for a receiver on the same
    /// machine), with `webhookSecretFile` beside it, which is a path: the secret never sits in the catalog.
    private func checkWebhook(_ result: inout PurchaseSettings, into diagnostics: inout [Diagnostic]) {
        if let (path, file) = webhookSecretFile {
            if path.value.allSatisfy(\.isWhitespace) {
                diagnostics.append(
                    .error(
                        "webhookSecretFile is empty; give the path of the file that holds the webhook's secret", file: file,
                        at: path.position))
            } else {
                result.webhookSecretFile = path.value
                if webhookURL == nil {
                    diagnostics.append(
                        .warning("webhookSecretFile is set but webhookURL is not; it is not used", file: file, at: path.position))
                }
            }
        }
        guard let (text, file) = webhookURL else { return }
        let loopback: Set<String> = ["localhost", "127.0.0.1", "::1", "[::1]"]
        guard let url = URL(string: text.value), let scheme = url.scheme?.lowercased(), let host = url.host, !host.isEmpty,
            scheme == "https" || scheme == "http"
        else {
            diagnostics.append(.error("webhookURL '\(text.value)' is not an absolute http or https URL", file: file, at: text.position))
            return
        }
        if scheme == "http" && !loopback.contains(host.lowercased()) {
            diagnostics.append(
                .error(
                    "webhookURL must use https (http only to a loopback host): webhooks carry what customers own", file: file,
                    at: text.position))
            return
        }
        if webhookSecretFile == nil {
            diagnostics.append(
                .error(
                    "webhookURL needs webhookSecretFile, the file that holds the secret that signs each webhook", file: file,
                    at: text.position))
            return
        }
        result.webhookURL = url
    }

    /// A product's `entitlements` list: each name like a product id (it is matched and shown beside
    /// them), none empty, none twice (a warning), the list not empty.
    static func checkEntitlements(_ list: Located<[Located<String>]>, file: String, into diagnostics: inout [Diagnostic]) -> (
        names: [String], valid: Bool
    ) {
        var names: [String] = []
        var valid = true
        for name in list.value {
            if name.value.isEmpty {
                diagnostics.append(.error("entitlement name is empty", file: file, at: name.position))
                valid = false
            } else if let problem = IdentifierRules.problem(name.value) {
                // The identifier rule's words, said of an entitlement.
                let message = problem.replacingOccurrences(of: "product id", with: "entitlement")
                diagnostics.append(.error(message, file: file, at: name.position))
                valid = false
            } else if names.contains(name.value) {
                diagnostics.append(.warning("entitlement '\(name.value)' is listed twice", file: file, at: name.position))
            } else {
                names.append(name.value)
            }
        }
        if list.value.isEmpty {
            diagnostics.append(
                .error(
                    "entitlements list is empty; leave it out to unlock the product's own id", file: file, at: list.position))
            valid = false
        }
        return (names, valid)
    }
}
