#ifndef CCURL_H
#define CCURL_H

#include <curl/curl.h>

// Typed front doors for libcurl's variadic setters and getters, which Swift cannot call.

typedef size_t (*hh_curl_data_callback)(char *data, size_t size, size_t count, void *context);
typedef int (*hh_curl_progress_callback)(void *context, curl_off_t download_total, curl_off_t downloaded,
                                         curl_off_t upload_total, curl_off_t uploaded);

CURLcode hh_curl_set_long(CURL *handle, CURLoption option, long value);
CURLcode hh_curl_set_offset(CURL *handle, CURLoption option, curl_off_t value);
CURLcode hh_curl_set_string(CURL *handle, CURLoption option, const char *value);
CURLcode hh_curl_set_pointer(CURL *handle, CURLoption option, void *value);
CURLcode hh_curl_set_data_callback(CURL *handle, CURLoption option, hh_curl_data_callback callback);
CURLcode hh_curl_set_progress_callback(CURL *handle, hh_curl_progress_callback callback);

CURLcode hh_curl_get_long(CURL *handle, CURLINFO info, long *value);
CURLcode hh_curl_get_string(CURL *handle, CURLINFO info, char **value);

/// curl_global_init(CURL_GLOBAL_DEFAULT), whose flags are macros.
CURLcode hh_curl_global_init(void);

CURLSHcode hh_curl_share_set_long(CURLSH *share, CURLSHoption option, long value);

#endif
