public import LuaSandbox

/// Every host library venue scripts can use, as the worker registers them.
public enum ScriptLibraries {
    public static let modules: [HostModule] = [TimeLibrary.module]
}
