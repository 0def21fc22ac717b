#include "CSystemd.h"

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
#define HH_SD_BUS_BIND(type, name, parameters, arguments)               \
    if (!(*(void **)&systemd.name = dlsym(library, #name))) {           \
        load_failure = "libsystemd.so.0 lacks " #name;                  \
        return;                                                         \
    }
    HH_SD_BUS_FUNCTIONS(HH_SD_BUS_BIND)
    HH_SD_BUS_BIND(void, sd_bus_error_free, (sd_bus_error * e), (e))
}

const char *hh_systemd_load(void) {
    pthread_once(&load_once, load);
    return load_failure;
}

#define HH_SD_BUS_CALL(type, name, parameters, arguments) \
    type hh_##name parameters { return systemd.name arguments; }
HH_SD_BUS_FUNCTIONS(HH_SD_BUS_CALL)

void hh_sd_bus_error_free(sd_bus_error *e) { systemd.sd_bus_error_free(e); }
