/// Everything the runtime reports: every command sent and every transition, and what the
/// daemon around it does. Each kind carries exactly its own fields; the command line and
/// the logs render this one type.
public enum HotspotEvent: Sendable, Equatable {
    /// A command and what its helper answered.
    case command(CommandEvent)
    /// A network changed state.
    case state(StateEvent)
    /// A line a script logged, or a note from the runtime.
    case log(LogEvent)
    /// The last event of a `connect`, and of each run of `dev`.
    case done(DoneEvent)
    /// A connectivity verdict: a change the monitor saw, or the check after a helper's success.
    case connectivity(ConnectivityEvent)
    /// Scripts were read again: what changed, and what did not load.
    case reload(ReloadEvent)

    /// The SSID the event is about, if any.
    public var network: String? {
        switch self {
        case .command(let event): event.network
        case .state(let event): event.network
        case .log(let event): event.network
        case .done(let event): event.network
        case .connectivity(let event): event.network
        case .reload: nil
        }
    }

    /// A log line about `network` (when given), from the runtime or the daemon.
    public static func log(_ level: LogEvent.Level, _ message: String, network: String? = nil, helper: String? = nil,
                           command: HotspotCommand? = nil) -> HotspotEvent {
        .log(LogEvent(network: network, helper: helper, command: command, level: level, message: message))
    }

    /// The event with every text a person or script wrote passed through `transform`
    /// (secrets are taken out this way).
    public func mappingText(_ transform: (String) -> String) -> HotspotEvent {
        switch self {
        case .command(var event):
            event.error = event.error.map(transform)
            return .command(event)
        case .log(var event):
            event.message = transform(event.message)
            return .log(event)
        case .state, .done, .connectivity, .reload:
            return self
        }
    }
}

public struct CommandEvent: Sendable, Equatable {
    public var network: String?
    public var command: HotspotCommand
    public var helper: String
    public var result: CommandResult
    /// For evaluate only.
    public var confidence: Confidence?
    /// How long the command took, in milliseconds, to the microsecond.
    public var milliseconds: Double
    public var error: String?

    public init(network: String?, command: HotspotCommand, helper: String, result: CommandResult,
                confidence: Confidence? = nil, milliseconds: Double, error: String? = nil) {
        self.network = network
        self.command = command
        self.helper = helper
        self.result = result
        self.confidence = confidence
        self.milliseconds = milliseconds
        self.error = error
    }
}

public struct StateEvent: Sendable, Equatable {
    public var network: String
    public var from: HotspotState
    public var to: HotspotState
    public var helper: String?

    public init(network: String, from: HotspotState, to: HotspotState, helper: String?) {
        self.network = network
        self.from = from
        self.to = to
        self.helper = helper
    }
}

public struct LogEvent: Sendable, Equatable {
    public enum Level: String, Sendable, CaseIterable {
        /// What a script printed with `print`.
        case print
        case debug, info, warn, error
    }

    public var network: String?
    public var helper: String?
    /// The command whose handler logged the line.
    public var command: HotspotCommand?
    public var level: Level
    public var message: String

    public init(network: String? = nil, helper: String? = nil, command: HotspotCommand? = nil, level: Level, message: String) {
        self.network = network
        self.helper = helper
        self.command = command
        self.level = level
        self.message = message
    }
}

public struct DoneEvent: Sendable, Equatable {
    public var network: String
    public var state: HotspotState
    public var helper: String?

    public init(network: String, state: HotspotState, helper: String?) {
        self.network = network
        self.state = state
        self.helper = helper
    }
}

public struct ConnectivityEvent: Sendable, Equatable {
    public var network: String?
    public var verdict: ConnectivityState
    /// Where to log in, when captive.
    public var portalURL: String?
    public var interfaceKind: InterfaceKind?
    /// The helper whose success the check followed, if it did.
    public var helper: String?

    public init(network: String?, verdict: ConnectivityState, portalURL: String? = nil,
                interfaceKind: InterfaceKind? = nil, helper: String? = nil) {
        self.network = network
        self.verdict = verdict
        self.portalURL = portalURL
        self.interfaceKind = interfaceKind
        self.helper = helper
    }
}

/// What a reload did, by helper id; problems as `file:line: message`.
public struct ReloadEvent: Sendable, Equatable {
    /// Why the scripts were read again (`started`, `SIGHUP`, `changed on disk`).
    public var reason: String
    public var added: [String]
    public var reloaded: [String]
    public var removed: [String]
    public var problems: [String]
    /// The signed catalog's version this reload took; nil when it took none (or the scripts
    /// are no signed catalog).
    public var catalogVersion: String?

    public init(reason: String, added: [String] = [], reloaded: [String] = [], removed: [String] = [], problems: [String] = [],
                catalogVersion: String? = nil) {
        self.reason = reason
        self.added = added
        self.reloaded = reloaded
        self.removed = removed
        self.problems = problems
        self.catalogVersion = catalogVersion
    }
}
