// What the project needs of glibc's GNU extensions and Linux's own calls that Swift's Glibc
// module leaves out (it does not define _GNU_SOURCE): one C shim for all of them.
#ifndef CGLIBCEXTENSIONS_H
#define CGLIBCEXTENSIONS_H

#include <spawn.h>
#include <stdint.h>
#include <time.h>

// Spawning (spawning.c)

/// posix_spawn_file_actions_addclosefrom_np: the spawned process gets no descriptor from
/// `from` up. 0, or an error number.
int spawning_add_close_from(posix_spawn_file_actions_t *actions, int from);

/// pipe2 with O_CLOEXEC: both ends are close-on-exec from the start, so a process another
/// thread spawns meanwhile cannot inherit them. 0, or -1 with errno set.
int spawning_close_on_exec_pipe(int ends[2]);

// The daemon's executor (timers.c)

/// A timer descriptor of `clock` (CLOCK_BOOTTIME, CLOCK_MONOTONIC), close-on-exec and
/// non-blocking, disarmed; -1 with errno set.
int hh_timer_create(clockid_t clock);

/// Sets the timer to expire once at `nanoseconds` of its clock; 0 disarms it. 0, or -1 with
/// errno set.
int hh_timer_set(int timer, int64_t nanoseconds);

/// Names the calling thread (at most 15 bytes), as /proc/<pid>/task/<tid>/comm shows it.
void hh_name_thread(const char *name);

#endif
