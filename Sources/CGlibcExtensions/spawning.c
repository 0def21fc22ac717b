#define _GNU_SOURCE
#include "CGlibcExtensions.h"

#include <fcntl.h>
#include <unistd.h>

int spawning_add_close_from(posix_spawn_file_actions_t *actions, int from) {
    return posix_spawn_file_actions_addclosefrom_np(actions, from);
}

int spawning_close_on_exec_pipe(int ends[2]) { return pipe2(ends, O_CLOEXEC); }
