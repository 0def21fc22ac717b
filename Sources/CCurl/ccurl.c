#include "CCurl.h"

CURLcode hh_curl_set_long(CURL *handle, CURLoption option, long value) {
    return curl_easy_setopt(handle, option, value);
}

CURLcode hh_curl_set_offset(CURL *handle, CURLoption option, curl_off_t value) {
    return curl_easy_setopt(handle, option, value);
}

CURLcode hh_curl_set_string(CURL *handle, CURLoption option, const char *value) {
    return curl_easy_setopt(handle, option, value);
}

CURLcode hh_curl_set_pointer(CURL *handle, CURLoption option, void *value) {
    return curl_easy_setopt(handle, option, value);
}

CURLcode hh_curl_set_data_callback(CURL *handle, CURLoption option, hh_curl_data_callback callback) {
    return curl_easy_setopt(handle, option, callback);
}

CURLcode hh_curl_set_progress_callback(CURL *handle, hh_curl_progress_callback callback) {
    CURLcode code = curl_easy_setopt(handle, CURLOPT_XFERINFOFUNCTION, callback);
    return code == CURLE_OK ? curl_easy_setopt(handle, CURLOPT_NOPROGRESS, 0L) : code;
}

CURLcode hh_curl_get_long(CURL *handle, CURLINFO info, long *value) {
    return curl_easy_getinfo(handle, info, value);
}

CURLcode hh_curl_get_string(CURL *handle, CURLINFO info, char **value) {
    return curl_easy_getinfo(handle, info, value);
}

CURLSHcode hh_curl_share_set_long(CURLSH *share, CURLSHoption option, long value) {
    return curl_share_setopt(share, option, value);
}

CURLcode hh_curl_global_init(void) {
    return curl_global_init(CURL_GLOBAL_DEFAULT);
}
