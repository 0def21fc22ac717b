#include "CLibraryLoading.h"

#include <dlfcn.h>
#include <limits.h>
#include <string.h>
#include <unistd.h>

// /usr/local/lib/hotspot-helper for /usr/local/bin/hotspot-helper (`make install`), the build
// folder's for a build (.build/<triple>/lib/hotspot-helper beside .build/<triple>/release).
static const char folder[] = "/../lib/hotspot-helper/";

void *hh_open_library(const char *file_name) {
    char path[PATH_MAX];
    ssize_t length = readlink("/proc/self/exe", path, sizeof path);
    if (length > 0 && (size_t)length < sizeof path) {
        path[length] = 0;
        char *folder_end = strrchr(path, '/');
        size_t name_length = strlen(file_name);
        if (folder_end && (size_t)(folder_end - path) + sizeof folder + name_length <= sizeof path) {
            memcpy(folder_end, folder, sizeof folder - 1);
            memcpy(folder_end + sizeof folder - 1, file_name, name_length + 1);
            if (access(path, F_OK) == 0) return dlopen(path, RTLD_NOW | RTLD_LOCAL);
        }
    }
    return dlopen(file_name, RTLD_NOW | RTLD_LOCAL);
}
