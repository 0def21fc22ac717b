#include "CCurl.h"

#include <CLibraryLoading.h>
#include <dlfcn.h>
#include <limits.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>

// libcurl is opened with dlopen, not linked: loading it takes milliseconds (about 1 ms for
// the project's own, HTTP and HTTPS only; 3-4 ms for Debian's, with its two dozen libraries:
// Kerberos, LDAP, SSH, RTMP with GnuTLS), which a process that will make requests spends on a
// thread of its own from its start (hh_curl_load_in_background) instead of in its first
// transfer, and a process that makes none never spends.
static struct {
    CURLcode (*global_init)(long flags);
    CURL *(*easy_init)(void);
    void (*easy_cleanup)(CURL *handle);
    CURLcode (*easy_perform)(CURL *handle);
    const char *(*easy_strerror)(CURLcode code);
    CURLcode (*easy_setopt)(CURL *handle, CURLoption option, ...);
    CURLcode (*easy_getinfo)(CURL *handle, CURLINFO info, ...);
    struct curl_slist *(*slist_append)(struct curl_slist *list, const char *text);
    void (*slist_free_all)(struct curl_slist *list);
    CURLSH *(*share_init)(void);
    void (*share_cleanup)(CURLSH *share);
    CURLSHcode (*share_setopt)(CURLSH *share, CURLSHoption option, ...);
} curl;

static pthread_once_t load_once = PTHREAD_ONCE_INIT;
static const char *load_failure;

/// Debian's libcurl, taken where the project's is not installed, brings GnuTLS through
/// librtmp, and GnuTLS initialises itself when loaded (its configuration, p11-kit's modules):
/// about 1 MiB resident for a library no transfer here uses (curl uses OpenSSL, and RTMP is
/// never allowed). This variable, set only while loading, skips that; GnuTLS still
/// initialises if anyone calls it. It is then the process's one change to its environment,
/// made once: a thread reading the environment meanwhile sees the variable or not, and
/// processes spawned later do not inherit it.
static void *open_debians(void) {
    int was_set = getenv("GNUTLS_NO_IMPLICIT_INIT") != NULL;
    if (!was_set) setenv("GNUTLS_NO_IMPLICIT_INIT", "1", 0);
    void *library = dlopen("libcurl.so.4", RTLD_NOW | RTLD_LOCAL);
    if (!was_set) unsetenv("GNUTLS_NO_IMPLICIT_INIT");
    return library;
}

static void load(void) {
    char path[PATH_MAX];
    void *library = hh_private_library_path("libcurl.so.4", path, sizeof path) ? dlopen(path, RTLD_NOW | RTLD_LOCAL)
                                                                              : open_debians();
    if (!library) {
        load_failure = dlerror();
        return;
    }
    const hh_symbol symbols[] = {
        {"curl_global_init", (void **)&curl.global_init},
        {"curl_easy_init", (void **)&curl.easy_init},
        {"curl_easy_cleanup", (void **)&curl.easy_cleanup},
        {"curl_easy_perform", (void **)&curl.easy_perform},
        {"curl_easy_strerror", (void **)&curl.easy_strerror},
        {"curl_easy_setopt", (void **)&curl.easy_setopt},
        {"curl_easy_getinfo", (void **)&curl.easy_getinfo},
        {"curl_slist_append", (void **)&curl.slist_append},
        {"curl_slist_free_all", (void **)&curl.slist_free_all},
        {"curl_share_init", (void **)&curl.share_init},
        {"curl_share_cleanup", (void **)&curl.share_cleanup},
        {"curl_share_setopt", (void **)&curl.share_setopt},
    };
    static char failure[128];
    if ((load_failure = hh_bind_symbols(library, "libcurl.so.4", symbols, sizeof symbols / sizeof *symbols, failure, sizeof failure)))
        return;
    // OpenSSL frees its state at exit, from a handler it registers as it initialises: a
    // process that exited while this thread was still initialising it (a command ending at
    // once, on a usage error) crashed in the freed state. Initialised first without the
    // handler, its state goes with the process (OPENSSL_INIT_NO_ATEXIT, OpenSSL 1.1.1 and 3).
    int (*init_crypto)(uint64_t options, const void *settings) = dlsym(library, "OPENSSL_init_crypto");
    if (init_crypto) (void)init_crypto(0x00080000L, NULL);
    if (curl.global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) load_failure = "curl_global_init failed";
}

const char *hh_curl_load(void) {
    pthread_once(&load_once, load);
    return load_failure;
}

static void *load_on_thread(void *unused) {
    (void)unused;
    hh_curl_load();
    return NULL;
}

void hh_curl_load_in_background(void) {
    pthread_attr_t attributes;
    if (pthread_attr_init(&attributes) != 0) return;
    pthread_attr_setdetachstate(&attributes, PTHREAD_CREATE_DETACHED);
    pthread_t thread;
    // Without a thread, the first transfer loads it as before.
    (void)pthread_create(&thread, &attributes, load_on_thread, NULL);
    pthread_attr_destroy(&attributes);
}

CURL *hh_curl_easy_init(void) { return curl.easy_init(); }
void hh_curl_easy_cleanup(CURL *handle) { curl.easy_cleanup(handle); }
CURLcode hh_curl_easy_perform(CURL *handle) { return curl.easy_perform(handle); }
const char *hh_curl_easy_strerror(CURLcode code) { return curl.easy_strerror(code); }
struct curl_slist *hh_curl_slist_append(struct curl_slist *list, const char *text) {
    return curl.slist_append(list, text);
}
void hh_curl_slist_free_all(struct curl_slist *list) { curl.slist_free_all(list); }
CURLSH *hh_curl_share_init(void) { return curl.share_init(); }
void hh_curl_share_cleanup(CURLSH *share) { curl.share_cleanup(share); }

CURLcode hh_curl_set_long(CURL *handle, CURLoption option, long value) {
    return curl.easy_setopt(handle, option, value);
}

CURLcode hh_curl_set_offset(CURL *handle, CURLoption option, curl_off_t value) {
    return curl.easy_setopt(handle, option, value);
}

CURLcode hh_curl_set_string(CURL *handle, CURLoption option, const char *value) {
    return curl.easy_setopt(handle, option, value);
}

CURLcode hh_curl_set_pointer(CURL *handle, CURLoption option, void *value) {
    return curl.easy_setopt(handle, option, value);
}

CURLcode hh_curl_set_data_callback(CURL *handle, CURLoption option, hh_curl_data_callback callback) {
    return curl.easy_setopt(handle, option, callback);
}

CURLcode hh_curl_set_progress_callback(CURL *handle, hh_curl_progress_callback callback) {
    CURLcode code = curl.easy_setopt(handle, CURLOPT_XFERINFOFUNCTION, callback);
    return code == CURLE_OK ? curl.easy_setopt(handle, CURLOPT_NOPROGRESS, 0L) : code;
}

CURLcode hh_curl_get_long(CURL *handle, CURLINFO info, long *value) {
    return curl.easy_getinfo(handle, info, value);
}

CURLcode hh_curl_get_cookies(CURL *handle, struct curl_slist **cookies) {
    return curl.easy_getinfo(handle, CURLINFO_COOKIELIST, cookies);
}

CURLSHcode hh_curl_share_set_long(CURLSH *share, CURLSHoption option, long value) {
    return curl.share_setopt(share, option, value);
}
