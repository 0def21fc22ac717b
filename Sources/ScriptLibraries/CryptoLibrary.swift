internal import COpenSSLCrypto
public import LuaSandbox
import ScriptContract

/// `crypto.md5(s)`, `crypto.sha1(s)`, `crypto.sha256(s)` and `crypto.hmac_sha256(key, message)`,
/// from OpenSSL's libcrypto. Each returns the digest as lower-case hex, or as raw bytes when
/// given `"raw"` as an extra last argument (portals sometimes base64 the raw digest).
public enum CryptoLibrary {
    public static let module = HostModule.library(.crypto, functions: [
        ("md5", { call in try digest(call, hh_digest_md5) }),
        ("sha1", { call in try digest(call, hh_digest_sha1) }),
        ("sha256", { call in try digest(call, hh_digest_sha256) }),
        ("hmac_sha256", { (call: borrowing HostCall) throws -> [LuaValue] in
            try checkLoaded(call)
            let key = try call.bytes(0)
            let message = try call.bytes(1)
            let raw = try wantsRawBytes(call, at: 2)
            // OpenSSL 3 refuses a NULL key, which an empty array may hand over.
            let keyBytes = key.isEmpty ? [0] : key
            let mac = try output { buffer, size in
                hh_crypto_hmac_sha256(keyBytes, Int32(key.count), message, message.count, buffer, size) == 1
            }
            return [.string(raw ? mac : hex(mac))]
        }),
    ])

    /// Why libcrypto cannot be used, or nil once it is loaded (by the first call here).
    private static let libcryptoFailure: String? = hh_crypto_load().map { String(cString: $0) }

    private static func checkLoaded(_ call: borrowing HostCall) throws(HostError) {
        if let libcryptoFailure { throw HostError("\(call.functionName): libcrypto is not usable: \(libcryptoFailure)") }
    }

    private static func digest(_ call: borrowing HostCall, _ algorithm: hh_digest) throws -> [LuaValue] {
        try checkLoaded(call)
        let data = try call.bytes(0)
        let raw = try wantsRawBytes(call, at: 1)
        let digest = try output { buffer, size in hh_crypto_digest(algorithm, data, data.count, buffer, size) == 1 }
        return [.string(raw ? digest : hex(digest))]
    }

    /// Runs an OpenSSL call that writes at most `EVP_MAX_MD_SIZE` bytes and reports how many.
    private static func output(
        _ produce: (UnsafeMutablePointer<UInt8>, UnsafeMutablePointer<UInt32>) -> Bool
    ) throws(HostError) -> [UInt8] {
        var size: UInt32 = 0
        var buffer = [UInt8](repeating: 0, count: Int(EVP_MAX_MD_SIZE))
        guard buffer.withUnsafeMutableBufferPointer({ produce($0.baseAddress!, &size) }) else {
            throw HostError("crypto: OpenSSL failed to compute the digest")
        }
        return Array(buffer.prefix(Int(size)))
    }

    /// The optional last argument: nothing for hex, `"raw"` for the bytes themselves.
    private static func wantsRawBytes(_ call: borrowing HostCall, at index: Int) throws(HostError) -> Bool {
        if call[index].isNil { return false }
        let option = try call.string(index)
        guard option == "raw" else { throw call.badArgument(index, "invalid option '\(option)'") }
        return true
    }

    private static func hex(_ bytes: [UInt8]) -> [UInt8] {
        let digits = Array("0123456789abcdef".utf8)
        return bytes.flatMap { [digits[Int($0 >> 4)], digits[Int($0 & 15)]] }
    }
}
