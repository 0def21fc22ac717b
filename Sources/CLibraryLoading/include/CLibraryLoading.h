#ifndef CLIBRARYLOADING_H
#define CLIBRARYLOADING_H

/// Opens the library `file_name` (its soname, such as "libcurl.so.4") with
/// dlopen(RTLD_NOW | RTLD_LOCAL): the project's own build of it,
/// lib/hotspot-helper/`file_name` beside the executable's folder, where there is one
/// (`make private-libraries`), else the system's, by its name. One that is
/// there but cannot be loaded is not passed over for the system's. NULL when it cannot be
/// opened, and dlerror() says why (with the path tried).
void *hh_open_library(const char *file_name);

#endif
