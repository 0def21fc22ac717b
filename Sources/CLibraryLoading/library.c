#include "CLibraryLoading.h"

#include <dlfcn.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

// /usr/local/lib/hotspot-helper for /usr/local/bin/hotspot-helper (`make install`), the build
// folder's for a build (.build/<triple>/lib/hotspot-helper beside .build/<triple>/release).
static const char folder[] = "/../lib/hotspot-helper/";

int hh_private_library_path(const char *file_name, char *path, unsigned long size) {
    ssize_t length = readlink("/proc/self/exe", path, size);
    if (length <= 0 || (size_t)length >= size) return 0;
    path[length] = 0;
    char *folder_end = strrchr(path, '/');
    size_t name_length = strlen(file_name);
    if (!folder_end || (size_t)(folder_end - path) + sizeof folder + name_length > size) return 0;
    memcpy(folder_end, folder, sizeof folder - 1);
    memcpy(folder_end + sizeof folder - 1, file_name, name_length + 1);
    return access(path, F_OK) == 0;
}

const char *hh_bind_symbols(void *library, const char *library_name, const hh_symbol *symbols, unsigned long count,
                            char *failure, unsigned long size) {
    for (unsigned long index = 0; index < count; index++) {
        if ((*symbols[index].slot = dlsym(library, symbols[index].name))) continue;
        snprintf(failure, size, "%s lacks %s", library_name, symbols[index].name);
        return failure;
    }
    return NULL;
}

void *hh_open_library(const char *file_name) {
    char path[PATH_MAX];
    return dlopen(hh_private_library_path(file_name, path, sizeof path) ? path : file_name, RTLD_NOW | RTLD_LOCAL);
}
