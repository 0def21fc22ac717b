// What spawning a process needs from glibc's GNU extensions, which Swift's Glibc module
// leaves out (it does not define _GNU_SOURCE).
#ifndef CSPAWNING_H
#define CSPAWNING_H

#include <spawn.h>

/// posix_spawn_file_actions_addclosefrom_np: the spawned process gets no descriptor from
/// `from` up. 0, or an error number.
int spawning_add_close_from(posix_spawn_file_actions_t *actions, int from);

/// pipe2 with O_CLOEXEC: both ends are close-on-exec from the start, so a process another
/// thread spawns meanwhile cannot inherit them. 0, or -1 with errno set.
int spawning_close_on_exec_pipe(int ends[2]);

#endif
