#ifndef COPENSSLCRYPTO_H
#define COPENSSLCRYPTO_H

#include <openssl/evp.h>

// OpenSSL's libcrypto, opened on first use (hh_crypto_load) rather than when the process
// starts, as libcurl and libxml2 are: only a script calling `crypto` needs it, and a
// process that loads libcurl gets it from there meanwhile.

/// The digests the script libraries compute.
typedef enum { hh_digest_md5, hh_digest_sha1, hh_digest_sha256 } hh_digest;

/// Loads libcrypto, once; later calls return the first call's result. NULL on success, else
/// why libcrypto is not usable (a static string or dlerror()'s, valid for the life of the
/// process). Call it before the functions below.
const char *hh_crypto_load(void);

/// EVP_Digest of `data` with `digest` into `output` (EVP_MAX_MD_SIZE bytes); 1 on success.
int hh_crypto_digest(hh_digest digest, const void *data, size_t count, unsigned char *output, unsigned int *size);

/// HMAC-SHA-256 of `message` with `key` into `output` (EVP_MAX_MD_SIZE bytes); 1 on success.
int hh_crypto_hmac_sha256(const void *key, int key_length, const unsigned char *message, size_t count,
                          unsigned char *output, unsigned int *size);

#endif
