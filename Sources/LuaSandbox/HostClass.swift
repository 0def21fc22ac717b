/// A kind of Swift object scripts hold as userdata and use through methods, for example
/// a connection with `send`, `receive` and `close`.
///
/// A host function hands one to a script by returning `hostClass.object(instance)`. In
/// the script the value is a userdata whose metatable is locked (`getmetatable` answers
/// `"locked"`), whose fields are the methods, and whose `__name` is the class name. A
/// method receives the Swift object itself and the other arguments; it runs like a host
/// function (its thrown errors become Lua errors raised from C). Called on anything but
/// an object of its class, a method raises a clean Lua error.
///
/// Every class gets a `close` method. `close`, `__close` (a `<close>` variable), `__gc`
/// (collection, or the state closing) and, for `.call` objects, the end of the call
/// release the object: `close` is called once and the engine drops its reference; any
/// later method but `close` raises "attempt to use a closed ...". Release runs inside
/// Lua's collector, so it must be quick and must not block.
///
/// Objects never cross the worker protocol: returning one from a call is an
/// `invalidValue` error, and passing one to a host function is refused.
public final class HostClass<Object: AnyObject & Sendable>: Sendable {
    public typealias Method = @Sendable (Object, borrowing HostCall) throws -> [LuaValue]

    public let name: String
    let methods: [(name: String, method: Method)]
    let release: (@Sendable (Object) -> Void)?
    let lifetime: HostObjectLifetime

    /// `methods` must not include `close`, which every class gets; `close` is what
    /// releasing an object does on top of dropping the engine's reference.
    public init(_ name: String, lifetime: HostObjectLifetime = .collected,
                methods: [(name: String, method: Method)], close: (@Sendable (Object) -> Void)? = nil) {
        precondition(!methods.contains { $0.name == "close" }, "\(name): `close` is provided by the engine")
        self.name = name
        self.lifetime = lifetime
        self.methods = methods
        self.release = close
    }

    /// `instance` as a value a host function or method can return to the script.
    public func object(_ instance: Object) -> LuaValue {
        .object(HostObject(instance, of: self))
    }
}

/// How long a host object may live.
public enum HostObjectLifetime: Sendable {
    /// Until the script closes it or drops it and the collector finds it.
    case collected
    /// At most until the end of the call that created it, so a forgotten one (an open
    /// socket) never outlives its call.
    case call
}

/// A Swift object as a script value; see `HostClass`. Equal only to itself.
public final class HostObject: Sendable, Hashable {
    let instance: any AnyObject & Sendable
    let hostClass: any AnyHostClass

    init(_ instance: any AnyObject & Sendable, of hostClass: any AnyHostClass) {
        self.instance = instance
        self.hostClass = hostClass
    }

    public var className: String { hostClass.name }

    public static func == (left: HostObject, right: HostObject) -> Bool { left === right }
    public func hash(into hasher: inout Hasher) { hasher.combine(ObjectIdentifier(self)) }
}

/// A `HostClass` with its object type erased, as the registry of a state keeps it.
protocol AnyHostClass: AnyObject, Sendable {
    var name: String { get }
    var lifetime: HostObjectLifetime { get }
    /// The methods in their numbering; the last is `close`.
    var methodNames: [String] { get }
    func invoke(_ method: Int, on instance: AnyObject, _ call: borrowing HostCall) throws -> [LuaValue]
    func close(_ instance: AnyObject)
}

extension HostClass: AnyHostClass {
    var methodNames: [String] { methods.map(\.name) + ["close"] }

    func invoke(_ method: Int, on instance: AnyObject, _ call: borrowing HostCall) throws -> [LuaValue] {
        // The C side checked `self`'s class, and objects are registered with their own class.
        try methods[method].method(instance as! Object, call)
    }

    func close(_ instance: AnyObject) {
        release?(instance as! Object)
    }
}
