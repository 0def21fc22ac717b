/// The few path operations the runtime and the script watcher need, on plain strings, as NSString has them:
/// trailing slashes do not make an empty last component. Named apart from Foundation's
/// so that code seeing both (tests) is never ambiguous.
extension String {
    /// "/a/b.lua" → "b.lua"; "/a/b/" → "b"; "/" → "/".
    package var pathLastComponent: String {
        let trimmed = withoutTrailingSlashes
        guard trimmed != "/", let slash = trimmed.lastIndex(of: "/") else { return trimmed }
        return String(trimmed[trimmed.index(after: slash)...])
    }

    /// "/a/b.lua" → "/a"; "a//b.lua" → "a"; "/a" → "/"; "b.lua" → "".
    package var pathDeletingLastComponent: String {
        let trimmed = withoutTrailingSlashes
        guard trimmed != "/", let slash = trimmed.lastIndex(of: "/") else { return trimmed == "/" ? "/" : "" }
        return String(trimmed[...slash]).withoutTrailingSlashes
    }

    /// "/a/b.lua" → "/a/b"; a name that only starts with a dot (".lua") keeps it.
    package var pathDeletingExtension: String {
        let name = pathLastComponent
        guard let dot = name.lastIndex(of: "."), dot != name.startIndex else { return self }
        return String(withoutTrailingSlashes.dropLast(name[dot...].count))
    }

    /// "/a" + "b.lua" → "/a/b.lua", with one slash between them.
    package func pathAppending(component: String) -> String {
        guard !isEmpty else { return component }
        let directory = withoutTrailingSlashes
        return directory == "/" ? "/" + component : directory + "/" + component
    }

    private var withoutTrailingSlashes: String {
        guard let last = lastIndex(where: { $0 != "/" }) else { return isEmpty ? "" : "/" }
        return String(self[...last])
    }
}
