#include "CSystemd.h"

#include <CLibraryLoading.h>
#include <dlfcn.h>
#include <pthread.h>

#define HH_SD_BUS_POINTER(type, name, parameters, arguments) type(*name) parameters;
static struct {
    HH_SD_BUS_FUNCTIONS(HH_SD_BUS_POINTER)
    void (*sd_bus_error_free)(sd_bus_error *e);
} systemd;

static pthread_once_t load_once = PTHREAD_ONCE_INIT;
static const char *load_failure;

static void load(void) {
    void *library = dlopen("libsystemd.so.0", RTLD_NOW | RTLD_LOCAL);
    if (!library) {
        load_failure = dlerror();
        return;
    }
#define HH_SD_BUS_SYMBOL(type, name, parameters, arguments) {#name, (void **)&systemd.name},
    const hh_symbol symbols[] = {
        HH_SD_BUS_FUNCTIONS(HH_SD_BUS_SYMBOL)
        {"sd_bus_error_free", (void **)&systemd.sd_bus_error_free},
    };
    static char failure[128];
    load_failure = hh_bind_symbols(library, "libsystemd.so.0", symbols, sizeof symbols / sizeof *symbols, failure, sizeof failure);
}

const char *hh_systemd_load(void) {
    pthread_once(&load_once, load);
    return load_failure;
}

#define HH_SD_BUS_CALL(type, name, parameters, arguments) \
    type hh_##name parameters { return systemd.name arguments; }
HH_SD_BUS_FUNCTIONS(HH_SD_BUS_CALL)

void hh_sd_bus_error_free(sd_bus_error *e) { systemd.sd_bus_error_free(e); }
