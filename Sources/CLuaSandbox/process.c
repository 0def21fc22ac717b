#define _GNU_SOURCE
#include "CLuaSandbox.h"

#include <signal.h>
#include <sys/prctl.h>

int sbx_die_with_parent(void) { return prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0); }

int sbx_spawn_close_from(posix_spawn_file_actions_t *actions, int from) {
    return posix_spawn_file_actions_addclosefrom_np(actions, from);
}
