#include "COpenSSLCrypto.h"

#include <dlfcn.h>
#include <pthread.h>

static struct {
    const EVP_MD *(*md5)(void);
    const EVP_MD *(*sha1)(void);
    const EVP_MD *(*sha256)(void);
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
#define BIND(field, symbol)                                             \
    if (!(*(void **)&crypto.field = dlsym(library, symbol))) {          \
        load_failure = "libcrypto.so.3 lacks " symbol;                  \
        return;                                                         \
    }
    BIND(md5, "EVP_md5")
    BIND(sha1, "EVP_sha1")
    BIND(sha256, "EVP_sha256")
    BIND(digest, "EVP_Digest")
    BIND(hmac, "HMAC")
#undef BIND
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
