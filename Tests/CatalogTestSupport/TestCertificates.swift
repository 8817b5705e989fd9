import Foundation

/// Certificates the tests make themselves, with the openssl command: a CA, a server certificate
/// it signed (P-256, valid two days), and a second CA that signed nothing, to be refused.
public enum TestCertificates {
    public struct Files: Sendable {
        public var ca: URL
        public var otherCA: URL
        public var certificate: URL
        public var key: URL
    }

    /// Writes the files into `folder`, the server's named by `subjectAltName` (openssl's syntax).
    /// `prefix` names the files, so that one folder can hold several sets.
    public static func make(in folder: URL, subjectAltName: String = "DNS:localhost", prefix: String = "") throws -> Files {
        func openssl(_ arguments: [String]) throws {
            let process = Process()
            process.executableURL = URL(fileURLWithPath: "/usr/bin/openssl")
            process.arguments = arguments
            process.currentDirectoryURL = folder
            process.standardOutput = FileHandle.nullDevice
            process.standardError = FileHandle.nullDevice
            try process.run()
            process.waitUntilExit()
            guard process.terminationStatus == 0 else { throw OpenSSLFailed(arguments: arguments) }
        }
        let curve = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
        let name = { (file: String) in prefix + file }
        try openssl(
            ["req", "-x509"] + curve + ["-keyout", name("ca.key"), "-out", name("ca.pem"), "-days", "2", "-subj", "/CN=catalog test CA"])
        try openssl(
            ["req", "-x509"] + curve + ["-keyout", name("other.key"), "-out", name("other.pem"), "-days", "2", "-subj", "/CN=another CA"])
        try openssl(["req"] + curve + ["-keyout", name("server.key"), "-out", name("server.csr"), "-subj", "/CN=localhost"])
        try Data("subjectAltName=\(subjectAltName)\n".utf8).write(to: folder.appendingPathComponent(name("san.ext")))
        try openssl([
            "x509", "-req", "-in", name("server.csr"), "-CA", name("ca.pem"), "-CAkey", name("ca.key"), "-CAcreateserial",
            "-out", name("server.crt"), "-days", "2", "-extfile", name("san.ext"),
        ])
        return Files(
            ca: folder.appendingPathComponent(name("ca.pem")), otherCA: folder.appendingPathComponent(name("other.pem")),
            certificate: folder.appendingPathComponent(name("server.crt")), key: folder.appendingPathComponent(name("server.key")))
    }

    public struct OpenSSLFailed: Error {
        public var arguments: [String]
    }
}
