internal import COpenSSLCrypto

/// What the CHAP logins of `coovachilli` and `mikrotik` compute: MD5 over the id, the password
/// and the challenge, and hex.
enum CHAP {
    static func hex(_ byte: UInt8) -> String { byte < 16 ? "0" + String(byte, radix: 16) : String(byte, radix: 16) }
    static func hex(_ bytes: [UInt8]) -> String { bytes.map(hex).joined() }

    static func md5(_ data: [UInt8]) -> [UInt8] {
        precondition(hh_crypto_load() == nil, "libcrypto is not usable")
        var output = [UInt8](repeating: 0, count: Int(EVP_MAX_MD_SIZE))
        var size: UInt32 = 0
        precondition(hh_crypto_digest(hh_digest_md5, data, data.count, &output, &size) == 1, "MD5 failed")
        return Array(output.prefix(Int(size)))
    }
}
