import PackagePlugin

/// Embeds a target's `.lua` files in it as Swift strings (`EmbeddedLua.<base name>`), so the
/// Lua is edited, linted and checked as Lua, and still ships inside the binary.
@main
struct EmbedLuaPlugin: BuildToolPlugin {
    func createBuildCommands(context: PluginContext, target: any Target) throws -> [Command] {
        guard let target = target as? SourceModuleTarget else { return [] }
        let scripts = target.sourceFiles(withSuffix: "lua").map(\.url).sorted { $0.path < $1.path }
        guard !scripts.isEmpty else { return [] }
        let output = context.pluginWorkDirectoryURL.appending(path: "EmbeddedLua.swift")
        return [.buildCommand(
            displayName: "Embedding the Lua of \(target.name)",
            executable: try context.tool(named: "embed-lua").url,
            arguments: [output.path] + scripts.map(\.path),
            inputFiles: scripts,
            outputFiles: [output])]
    }
}
