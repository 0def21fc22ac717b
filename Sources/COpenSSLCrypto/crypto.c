#include "COpenSSLCrypto.h"

#include <CLibraryLoading.h>
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
    const hh_symbol symbols[] = {
        {"EVP_md5", (void **)&crypto.md5},
        {"EVP_sha1", (void **)&crypto.sha1},
        {"EVP_sha256", (void **)&crypto.sha256},
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
