#ifndef CCURL_H
#define CCURL_H

#include <curl/curl.h>

// libcurl, loaded on first use (hh_curl_load) rather than when the process starts, and
// typed front doors for its variadic setters and getters, which Swift cannot call. Every
// libcurl function the network layer uses goes through here.

typedef size_t (*hh_curl_data_callback)(char *data, size_t size, size_t count, void *context);
typedef int (*hh_curl_progress_callback)(void *context, curl_off_t download_total, curl_off_t downloaded,
                                         curl_off_t upload_total, curl_off_t uploaded);

/// Loads libcurl and runs curl_global_init(CURL_GLOBAL_DEFAULT), once; later calls return
/// the first call's result. NULL on success, else why libcurl is not usable (a static string
/// or dlerror()'s, valid for the life of the process). Call it before any function below.
const char *hh_curl_load(void);

/// Starts hh_curl_load on a thread of its own and returns at once: the milliseconds of
/// mapping and relocating libcurl and OpenSSL then overlap the work before the first
/// transfer, which waits only for what is left.
void hh_curl_load_in_background(void);

CURL *hh_curl_easy_init(void);
void hh_curl_easy_cleanup(CURL *handle);
CURLcode hh_curl_easy_perform(CURL *handle);
const char *hh_curl_easy_strerror(CURLcode code);
struct curl_slist *hh_curl_slist_append(struct curl_slist *list, const char *text);
void hh_curl_slist_free_all(struct curl_slist *list);
CURLSH *hh_curl_share_init(void);
void hh_curl_share_cleanup(CURLSH *share);

CURLcode hh_curl_set_long(CURL *handle, CURLoption option, long value);
CURLcode hh_curl_set_offset(CURL *handle, CURLoption option, curl_off_t value);
CURLcode hh_curl_set_string(CURL *handle, CURLoption option, const char *value);
CURLcode hh_curl_set_pointer(CURL *handle, CURLoption option, void *value);
CURLcode hh_curl_set_data_callback(CURL *handle, CURLoption option, hh_curl_data_callback callback);
CURLcode hh_curl_set_progress_callback(CURL *handle, hh_curl_progress_callback callback);

CURLcode hh_curl_get_long(CURL *handle, CURLINFO info, long *value);
/// CURLINFO_COOKIELIST: every cookie the handle (and its share) holds, a Netscape line each;
/// free the list with hh_curl_slist_free_all.
CURLcode hh_curl_get_cookies(CURL *handle, struct curl_slist **cookies);

CURLSHcode hh_curl_share_set_long(CURLSH *share, CURLSHoption option, long value);

#endif
