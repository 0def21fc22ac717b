/// Values by SSID, told apart by their bytes as 802.11 has them: a `[String: Value]` would
/// merge the NFC and NFD forms of one name (Swift compares strings by canonical
/// equivalence), and two networks would share one session.
struct SessionsBySSID<Value> {
    private struct Key: Hashable {
        let ssid: String
        static func == (left: Key, right: Key) -> Bool { left.ssid.utf8.elementsEqual(right.ssid.utf8) }
        func hash(into hasher: inout Hasher) {
            for byte in ssid.utf8 { hasher.combine(byte) }
        }
    }

    private var values: [Key: Value] = [:]

    subscript(ssid: String) -> Value? {
        get { values[Key(ssid: ssid)] }
        set { values[Key(ssid: ssid)] = newValue }
    }

    var ssids: [String] { values.keys.map(\.ssid) }
    var all: [(ssid: String, value: Value)] { values.map { ($0.key.ssid, $0.value) } }
    var allValues: [Value] { Array(values.values) }
}
