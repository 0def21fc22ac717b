/// Why a load or a call did not produce values.
public struct LuaScriptError: Error, Sendable, Equatable {
    public enum Kind: String, Sendable, Equatable {
        /// The script raised an error (or called something that did).
        case runtime
        /// The source does not compile.
        case syntax
        /// The script's state reached its memory cap, or the worker's scripts together reached
        /// the worker's.
        case memoryLimit = "memory_limit"
        /// The call ran past its deadline and was stopped.
        case deadlineExceeded = "deadline_exceeded"
        /// The call used more CPU time than it was allowed, and was stopped.
        case cpuLimit = "cpu_limit"
        /// The call was cancelled by its caller.
        case cancelled
        /// The call returned a value that cannot leave the sandbox (a function, a cycle...).
        case invalidValue = "invalid_value"
        /// The worker process running the call died (crash, out of memory, killed).
        case workerLost = "worker_lost"
        /// The script is not loaded in the engine, or failed to load.
        case unavailable
    }

    public var kind: Kind
    /// What happened, as the script or the engine said it.
    public var message: String
    /// `file:line` of the innermost script frame, when known.
    public var location: String?
    /// The Lua traceback at the error, when there was one.
    public var traceback: String?

    public init(_ kind: Kind, _ message: String, location: String? = nil, traceback: String? = nil) {
        self.kind = kind
        self.message = message
        self.location = location
        self.traceback = traceback
    }
}

extension LuaScriptError: CustomStringConvertible {
    /// One line a venue operator can act on: where, then what.
    public var description: String {
        // Lua's own messages usually start with the location already.
        if let location, !message.hasPrefix(location) { return "\(location): \(message)" }
        return message
    }
}
