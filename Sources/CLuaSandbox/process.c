#define _GNU_SOURCE
#include "CLuaSandbox.h"

#include <sched.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <unistd.h>

int sbx_die_with_parent(void) { return prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0); }

int sbx_forbid_core_dumps(void) {
    struct rlimit none = {0, 0};
    int limited = setrlimit(RLIMIT_CORE, &none);
    return prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) | limited;
}

int sbx_available_cores(void) {
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) > 0) return CPU_COUNT(&set);
    long online = sysconf(_SC_NPROCESSORS_ONLN);
    return online > 0 ? (int)online : 1;
}

int sbx_make_thread_batch(void) {
    struct sched_param parameters = {.sched_priority = 0};
    return sched_setscheduler(0, SCHED_BATCH, &parameters);
}
