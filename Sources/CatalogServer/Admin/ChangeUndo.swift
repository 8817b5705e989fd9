import CatalogKit
import Foundation

/// What an editor change may write, as it was before the change: put back when the change's audit
/// entry cannot be written, so that no change stays without its entry.
///
/// The change is made first (by ``CatalogWorkflow``, which writes the sources and the published
/// tree atomically file by file), then its audit entry is written; a failed audit write undoes it.
/// The entry cannot come first: it records what the change did (the summary, the hash after).
/// Between the change and the undo, for the few milliseconds an audit write takes to fail, the
/// change can be read (a server reloading the tree may serve a publication that is then undone).
struct ChangeUndo: Sendable {
    /// Files and their bytes before the change; nil: there was no file, and one made is removed.
    private var files: [String: Data?] = [:]
    /// Folders and the entries they held: an entry made since is removed, with all it holds.
    private var folders: [String: Set<String>] = [:]

    /// What an edit, a release or a quarantine may write: the app's source files (`<app>.plist`,
    /// `<app>.xml`, or every file under `<app>/`) and its feedback file.
    static func sources(of app: String, in workflow: CatalogWorkflow) -> ChangeUndo {
        var undo = ChangeUndo()
        let catalog = workflow.catalogDirectory
        for name in ["\(app).plist", "\(app).xml"] { undo.keep(file: catalog.appendingPathComponent(name)) }
        undo.keep(file: workflow.feedbackURL(app))
        undo.keep(tree: catalog.appendingPathComponent(app, isDirectory: true))
        return undo
    }

    /// What a publication or a rollback may write besides the sources: the app's current manifest
    /// and static feeds (the variants' under `variants/` included), and new revision folders
    /// (public and records).
    static func publication(of app: String, in workflow: CatalogWorkflow) -> ChangeUndo {
        var undo = sources(of: app, in: workflow)
        let tree = PublicTree(root: workflow.publicDirectory)
        undo.keep(entries: tree.appsDirectory)
        let appDirectory = tree.appDirectory(app)
        undo.keep(entries: appDirectory)
        for name in (try? FileManager.default.contentsOfDirectory(atPath: appDirectory.path)) ?? [] {
            let url = appDirectory.appendingPathComponent(name)
            if !Self.isFolder(url) { undo.keep(file: url) }
        }
        // The static copies of every other variant, replaced and removed by a publication too.
        undo.keep(tree: appDirectory.appendingPathComponent("variants", isDirectory: true))
        undo.keep(entries: tree.revisionsDirectory(app))
        undo.keep(entries: tree.recordsRevisionsDirectory(app))
        return undo
    }

    private mutating func keep(file url: URL) {
        files[url.path] = .some(FileManager.default.contents(atPath: url.path))
    }

    private mutating func keep(entries folder: URL) {
        folders[folder.path] = Set((try? FileManager.default.contentsOfDirectory(atPath: folder.path)) ?? [])
    }

    /// Every file and folder under `folder`, the folder's own entries included.
    private mutating func keep(tree folder: URL) {
        keep(entries: folder)
        for name in (try? FileManager.default.contentsOfDirectory(atPath: folder.path)) ?? [] {
            let url = folder.appendingPathComponent(name)
            if Self.isFolder(url) { keep(tree: url) } else { keep(file: url) }
        }
    }

    private static func isFolder(_ url: URL) -> Bool {
        var isDirectory: ObjCBool = false
        return FileManager.default.fileExists(atPath: url.path, isDirectory: &isDirectory) && isDirectory.boolValue
    }

    /// Puts every kept file back as it was, then removes what was made in the kept folders, under
    /// the build lock (a command-line build waits meanwhile). The files first: the current
    /// manifest goes back before the revision it names is removed.
    func restore(publicDirectory: URL) async throws {
        let lock = try await BuildLock.acquire(publicDirectory: publicDirectory)
        defer { withExtendedLifetime(lock) {} }
        let fileManager = FileManager.default
        for (path, before) in files.sorted(by: { $0.key < $1.key }) {
            let url = URL(fileURLWithPath: path)
            if let before {
                if fileManager.contents(atPath: path) != before { try AtomicFile.write(before, to: url) }
            } else if fileManager.fileExists(atPath: path) {
                try fileManager.removeItem(at: url)
                try AtomicFile.syncDirectory(url.deletingLastPathComponent())
            }
        }
        // Deepest first, so that a folder made inside a kept one goes before its parent is looked at.
        for (path, before) in folders.sorted(by: { $0.key > $1.key }) {
            let now = Set((try? fileManager.contentsOfDirectory(atPath: path)) ?? [])
            let made = now.subtracting(before)
            for name in made { try fileManager.removeItem(atPath: path + "/" + name) }
            if !made.isEmpty { try AtomicFile.syncDirectory(URL(fileURLWithPath: path)) }
        }
    }
}

/// A change whose audit entry could not be written: it was undone (`undoFailure` nil), or undoing
/// it failed too.
struct AuditFailure: Error, CustomStringConvertible {
    /// Why the audit entry was not written.
    var audit: any Error
    /// Why the change could not be undone, when it could not.
    var undoFailure: (any Error)?

    var description: String {
        if let undoFailure {
            return "the audit log could not be written (\(audit)), and undoing the change failed (\(undoFailure)): "
                + "the change stands without its audit entry"
        }
        return "the change was not made: its audit entry could not be written (\(audit))"
    }
}

extension AdminAPI {
    /// Makes `change`, then writes its audit entries with `audit`; when that fails, undoes what
    /// `undo` recorded before the change and throws ``AuditFailure``. Called inside the change
    /// queue, so that no other change comes between the change, its entry and the undo.
    func audited<T: Sendable>(
        _ undo: ChangeUndo, _ change: () throws -> T, audit: (T) async throws -> Void
    ) async throws -> T {
        let value = try change()
        do {
            try await audit(value)
        } catch {
            do {
                try await undo.restore(publicDirectory: workflow.publicDirectory)
            } catch let undoFailure {
                throw AuditFailure(audit: error, undoFailure: undoFailure)
            }
            throw AuditFailure(audit: error)
        }
        return value
    }
}
