#include "COpenSSLCrypto.h"

#include <CLibraryLoading.h>
#include <dlfcn.h>
#include <pthread.h>

static struct {
    const EVP_MD *(*md5)(void);
    const EVP_MD *(*sha1)(void);
    const EVP_MD *(*sha256)(void);
    const EVP_MD *(*blake2b512)(void);
    EVP_PKEY *(*new_raw_public_key)(int type, ENGINE *engine, const unsigned char *key, size_t length);
    void (*pkey_free)(EVP_PKEY *key);
    EVP_MD_CTX *(*md_ctx_new)(void);
    void (*md_ctx_free)(EVP_MD_CTX *context);
    int (*digest_verify_init)(EVP_MD_CTX *context, EVP_PKEY_CTX **key_context, const EVP_MD *type, ENGINE *engine,
                              EVP_PKEY *key);
    int (*digest_verify)(EVP_MD_CTX *context, const unsigned char *signature, size_t signature_length,
                         const unsigned char *message, size_t count);
    int (*digest)(const void *data, size_t count, unsigned char *output, unsigned int *size, const EVP_MD *type,
                  ENGINE *engine);
    unsigned char *(*hmac)(const EVP_MD *type, const void *key, int key_length, const unsigned char *data,
                           size_t count, unsigned char *output, unsigned int *size);
} crypto;

static pthread_once_t load_once = PTHREAD_ONCE_INIT;
static const char *load_failure;

static void load(void) {
    void *library = dlopen("libcrypto.so.3", RTLD_NOW | RTLD_LOCAL);
    if (!library) {
        load_failure = dlerror();
        return;
    }
    const hh_symbol symbols[] = {
        {"EVP_md5", (void **)&crypto.md5},
        {"EVP_sha1", (void **)&crypto.sha1},
        {"EVP_sha256", (void **)&crypto.sha256},
        {"EVP_blake2b512", (void **)&crypto.blake2b512},
        {"EVP_PKEY_new_raw_public_key", (void **)&crypto.new_raw_public_key},
        {"EVP_PKEY_free", (void **)&crypto.pkey_free},
        {"EVP_MD_CTX_new", (void **)&crypto.md_ctx_new},
        {"EVP_MD_CTX_free", (void **)&crypto.md_ctx_free},
        {"EVP_DigestVerifyInit", (void **)&crypto.digest_verify_init},
        {"EVP_DigestVerify", (void **)&crypto.digest_verify},
        {"EVP_Digest", (void **)&crypto.digest},
        {"HMAC", (void **)&crypto.hmac},
    };
    static char failure[128];
    load_failure = hh_bind_symbols(library, "libcrypto.so.3", symbols, sizeof symbols / sizeof *symbols, failure, sizeof failure);
}

const char *hh_crypto_load(void) {
    pthread_once(&load_once, load);
    return load_failure;
}

static const EVP_MD *algorithm(hh_digest digest) {
    switch (digest) {
    case hh_digest_md5: return crypto.md5();
    case hh_digest_sha1: return crypto.sha1();
    case hh_digest_sha256: return crypto.sha256();
    case hh_digest_blake2b512: return crypto.blake2b512();
    }
    return NULL;
}

int hh_crypto_digest(hh_digest digest, const void *data, size_t count, unsigned char *output, unsigned int *size) {
    return crypto.digest(data, count, output, size, algorithm(digest), NULL);
}

int hh_crypto_hmac_sha256(const void *key, int key_length, const unsigned char *message, size_t count,
                          unsigned char *output, unsigned int *size) {
    return crypto.hmac(crypto.sha256(), key, key_length, message, count, output, size) != NULL;
}

int hh_crypto_ed25519_verify(const unsigned char *key, const unsigned char *signature, const void *message, size_t count) {
    EVP_PKEY *public_key = crypto.new_raw_public_key(EVP_PKEY_ED25519, NULL, key, 32);
    if (!public_key) return 0;
    EVP_MD_CTX *context = crypto.md_ctx_new();
    int valid = context && crypto.digest_verify_init(context, NULL, NULL, NULL, public_key) == 1
        && crypto.digest_verify(context, signature, 64, message, count) == 1;
    crypto.md_ctx_free(context);
    crypto.pkey_free(public_key);
    return valid;
}
