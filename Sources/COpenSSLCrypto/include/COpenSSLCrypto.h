#ifndef COPENSSLCRYPTO_H
#define COPENSSLCRYPTO_H

#include <openssl/evp.h>

// OpenSSL's libcrypto, opened on first use (hh_crypto_load) rather than when the process
// starts, as libcurl and libxml2 are: only a script calling `crypto` needs it, and a
// process that loads libcurl gets it from there meanwhile.

/// The digests the script libraries compute, and signed catalogs check (BLAKE2b-512: minisign's).
typedef enum { hh_digest_md5, hh_digest_sha1, hh_digest_sha256, hh_digest_blake2b512 } hh_digest;

/// Loads libcrypto, once; later calls return the first call's result. NULL on success, else
/// why libcrypto is not usable (a static string or dlerror()'s, valid for the life of the
/// process). Call it before the functions below.
const char *hh_crypto_load(void);

/// EVP_Digest of `data` with `digest` into `output` (EVP_MAX_MD_SIZE bytes); 1 on success.
int hh_crypto_digest(hh_digest digest, const void *data, size_t count, unsigned char *output, unsigned int *size);

/// HMAC-SHA-256 of `message` with `key` into `output` (EVP_MAX_MD_SIZE bytes); 1 on success.
int hh_crypto_hmac_sha256(const void *key, int key_length, const unsigned char *message, size_t count,
                          unsigned char *output, unsigned int *size);

/// Whether `signature` (64 bytes) is a valid Ed25519 signature of `message` by `key` (32
/// bytes): 1 if so, 0 if not or when the key is no Ed25519 key (signed catalogs).
int hh_crypto_ed25519_verify(const unsigned char *key, const unsigned char *signature, const void *message, size_t count);

#endif
