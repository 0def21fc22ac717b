#ifndef CLIBRARYLOADING_H
#define CLIBRARYLOADING_H

/// Opens the library `file_name` (its soname, such as "libcurl.so.4") with
/// dlopen(RTLD_NOW | RTLD_LOCAL): the project's own build of it,
/// lib/hotspot-helper/`file_name` beside the executable's folder, where there is one
/// (`make private-libraries`), else the system's, by its name. One that is
/// there but cannot be loaded is not passed over for the system's. NULL when it cannot be
/// opened, and dlerror() says why (with the path tried).
void *hh_open_library(const char *file_name);

/// Whether the project's own build of `file_name` is installed; if so, its path in `path`
/// (`size` bytes at most), for a caller that opens it with set-up of its own.
int hh_private_library_path(const char *file_name, char *path, unsigned long size);

/// One function a library opened with dlopen must have, and where its address goes.
typedef struct {
    const char *name;
    void **slot;
} hh_symbol;

/// Binds `symbols` (`count` of them) from `library`, opened as `library_name`, in order:
/// NULL when the library has every one, else "LIBRARY lacks NAME" for the first it lacks,
/// written in `failure` (`size` bytes). What each of the project's library loaders shares.
const char *hh_bind_symbols(void *library, const char *library_name, const hh_symbol *symbols, unsigned long count,
                            char *failure, unsigned long size);

#endif
