#define _GNU_SOURCE
#include "CGlibcExtensions.h"

#include <pthread.h>
#include <sys/timerfd.h>

int hh_timer_create(clockid_t clock) { return timerfd_create(clock, TFD_CLOEXEC | TFD_NONBLOCK); }

int hh_timer_set(int timer, int64_t nanoseconds) {
    struct itimerspec setting = { .it_value = { .tv_sec = nanoseconds / 1000000000, .tv_nsec = nanoseconds % 1000000000 } };
    return timerfd_settime(timer, TFD_TIMER_ABSTIME, &setting, NULL);
}

void hh_name_thread(const char *name) { pthread_setname_np(pthread_self(), name); }
