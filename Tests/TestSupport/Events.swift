public import HotspotCore

/// What tests read of the events a runtime reported, by kind.
extension Array where Element == HotspotEvent {
    /// The commands, of one kind when given, in order.
    public func commands(_ command: HotspotCommand? = nil) -> [CommandEvent] {
        compactMap { event in
            guard case .command(let answered) = event, command == nil || answered.command == command else { return nil }
            return answered
        }
    }

    public var logs: [LogEvent] {
        compactMap { event in
            guard case .log(let line) = event else { return nil }
            return line
        }
    }

    public var connectivity: [ConnectivityEvent] {
        compactMap { event in
            guard case .connectivity(let verdict) = event else { return nil }
            return verdict
        }
    }

    /// `from>to` of every transition, in order.
    public var transitions: [String] {
        compactMap { event in
            guard case .state(let change) = event else { return nil }
            return "\(change.from.rawValue)>\(change.to.rawValue)"
        }
    }
}
