public import LuaSandbox

/// Every host library venue scripts can use, as the worker registers them.
public enum ScriptLibraries {
    public static let modules: [HostModule] = [
        TimeLibrary.module, JSONLibrary.module, Base64Library.module, URLLibrary.module, LogLibrary.module,
        HTMLLibrary.module, CryptoLibrary.module, HTTPLibrary.module, WISPrLibrary.module,
        SocketLibrary.module,
    ]
}
