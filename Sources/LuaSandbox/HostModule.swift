internal import CLuaSandbox

/// Swift functions offered to scripts as a module, for example `json.decode`.
///
/// Host functions run inside the worker process, on the thread of the call that invoked
/// them; they may block (the call's deadline still applies, through the worker kill).
/// They receive and return plain values; a thrown error becomes a Lua error raised
/// safely from C, so no long jump crosses Swift code.
public struct HostModule: Sendable {
    public let name: String
    public let functions: [(name: String, function: HostFunction)]
    /// Public modules are read-only globals of every script; the others are seen only
    /// by the trusted prelude, which can wrap them.
    public let isPublic: Bool

    public init(_ name: String, isPublic: Bool = true, functions: [(name: String, function: HostFunction)]) {
        self.name = name
        self.isPublic = isPublic
        self.functions = functions
    }
}

public typealias HostFunction = @Sendable (borrowing HostCall) throws -> [LuaValue]

/// An error a host function raises in the script, with the message as given.
public struct HostError: Error, Sendable {
    public let message: String
    public init(_ message: String) { self.message = message }
}

/// What a host function is called with: its arguments, and the running call's context.
public struct HostCall: ~Copyable {
    /// `module.name`, for error messages.
    public let functionName: String
    public let arguments: [LuaValue]
    let state: OpaquePointer
    let registry: HostRegistry

    /// How many objects of `hostClass` the running script holds open, for host functions
    /// that bound them (sockets per command).
    public func openObjects<Object>(of hostClass: HostClass<Object>) -> Int {
        registry.openObjectCount { $0 === hostClass }
    }

    /// The running call's deadline, if it has one; blocking work must end by then.
    public var deadline: Deadline? {
        let nanoseconds = sbx_deadline(state)
        return nanoseconds == 0 ? nil : Deadline(nanoseconds: nanoseconds)
    }

    /// Whether the call was cancelled: blocking work should stop early.
    public var isInterrupted: Bool { sbx_interrupted(state) != 0 }

    /// `isInterrupted` as a closure, for blocking work that polls it from callbacks. It
    /// must not be called after the host function returns.
    public var interruptionCheck: @Sendable () -> Bool {
        // The address, not the pointer, crosses to the probing threads: the state outlives them.
        let address = Int(bitPattern: state)
        return { sbx_interrupted(OpaquePointer(bitPattern: address)) != 0 }
    }

    /// Records a log line for the running call (the per-call limits apply).
    public func log(_ level: LogLevel, _ message: String) {
        var message = message
        message.withUTF8 { sbx_log(state, level.rawValue, $0.baseAddress, $0.count) }
    }

    public subscript(index: Int) -> LuaValue {
        index < arguments.count ? arguments[index] : .nil
    }

    /// An argument error in Lua's own words: `bad argument #1 to 'json.decode' (string expected, got nil)`.
    public func badArgument(_ index: Int, _ problem: String) -> HostError {
        HostError("bad argument #\(index + 1) to '\(functionName)' (\(problem))")
    }

    public func string(_ index: Int) throws(HostError) -> String {
        guard let text = self[index].stringValue else { throw mismatch(index, "string") }
        return text
    }

    public func bytes(_ index: Int) throws(HostError) -> [UInt8] {
        guard let bytes = self[index].bytesValue else { throw mismatch(index, "string") }
        return bytes
    }

    public func table(_ index: Int) throws(HostError) -> LuaTable {
        guard let table = self[index].tableValue else { throw mismatch(index, "table") }
        return table
    }

    public func number(_ index: Int) throws(HostError) -> Double {
        guard let number = self[index].numberValue else { throw mismatch(index, "number") }
        return number
    }

    private func mismatch(_ index: Int, _ expected: String) -> HostError {
        badArgument(index, "\(expected) expected, got \(self[index].typeName)")
    }
}

public enum LogLevel: Int32, Sendable, CaseIterable {
    case print = 0, debug, info, warn, error

    public var name: String {
        switch self {
        case .print: "print"
        case .debug: "debug"
        case .info: "info"
        case .warn: "warn"
        case .error: "error"
        }
    }
}

/// One line a script logged during a call.
public struct LogRecord: Sendable, Equatable {
    public let level: LogLevel
    public let message: String

    public init(level: LogLevel, message: String) {
        self.level = level
        self.message = message
    }
}
