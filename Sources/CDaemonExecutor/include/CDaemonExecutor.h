// What the daemon's executor (DaemonExecutor) needs of Linux and glibc that Swift's Glibc
// module leaves out: timer descriptors (sys/timerfd.h) and thread names (a GNU extension).
#ifndef CDAEMONEXECUTOR_H
#define CDAEMONEXECUTOR_H

#include <stdint.h>
#include <time.h>

/// A timer descriptor of `clock` (CLOCK_BOOTTIME, CLOCK_MONOTONIC), close-on-exec and
/// non-blocking, disarmed; -1 with errno set.
int hh_timer_create(clockid_t clock);

/// Sets the timer to expire once at `nanoseconds` of its clock; 0 disarms it. 0, or -1 with
/// errno set.
int hh_timer_set(int timer, int64_t nanoseconds);

/// Names the calling thread (at most 15 bytes), as /proc/<pid>/task/<tid>/comm shows it.
void hh_name_thread(const char *name);

#endif
