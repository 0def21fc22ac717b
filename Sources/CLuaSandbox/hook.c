// The count hook: deadlines, interrupts, the stall callback, and taking turns in the group.
#include "sandbox_internal.h"

// How long a script keeps its group while another script waits for it.
#define SBX_GROUP_SLICE_NS 1000000

// How long a call runs before the stall callback is called from the count hook.
#define SBX_STALL_NS 100000

int64_t sbx_monotonic_ns(void) {
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (int64_t)now.tv_sec * 1000000000 + now.tv_nsec;
}

int64_t sbx_cpu_clock_ns(clockid_t clock) {
    struct timespec used;
    if (clock_gettime(clock, &used) != 0) return -1;
    return (int64_t)used.tv_sec * 1000000000 + used.tv_nsec;
}

/// A system call, unlike CLOCK_MONOTONIC's: read only by calls that have a CPU limit.
int64_t hh_thread_cpu_ns(void) { return sbx_cpu_clock_ns(CLOCK_THREAD_CPUTIME_ID); }

void hh_deadline_hook(lua_State *L, lua_Debug *ar) {
    (void)ar;
    sbx_state *S = hh_state_of(L);
    if (atomic_load_explicit(&S->interrupted, memory_order_relaxed)) {
        lua_pushliteral(L, "cancelled");
        lua_error(L);
    }
    int64_t now = sbx_monotonic_ns();
    if (S->deadline_ns && !S->deadline_exceeded && now >= S->deadline_ns)
        S->deadline_exceeded = 1;
    if (S->cpu_limit_ns && !S->cpu_exceeded && hh_thread_cpu_ns() - S->cpu_started_ns >= S->cpu_limit_ns)
        S->cpu_exceeded = 1;
    if (hh_stall_callback && !S->stall_reported && now - S->entered_ns >= SBX_STALL_NS) {
        S->stall_reported = 1;
        hh_stall_callback();
    }
    // Raised again at every later hook, so a pcall that swallows it gains nothing. The
    // message handler records where it struck.
    if (S->deadline_exceeded) {
        lua_pushliteral(L, "deadline exceeded");
        lua_error(L);
    }
    if (S->cpu_exceeded) {
        lua_pushliteral(L, "CPU time limit exceeded");
        lua_error(L);
    }
    // Held for a slice while another script waits: let it run, so a loop cannot hold up
    // the group (a short call finishes first, sparing two thread switches). Never on the
    // main thread, which every script's setup uses.
    sbx_group *G = S->G;
    if (G->current == S && L != G->L && atomic_load(&G->next_ticket) - atomic_load(&G->serving) > 1 &&
        now - S->entered_ns >= SBX_GROUP_SLICE_NS) {
        hh_leave(S);
        hh_enter(S);
    }
}

/// Deadline, CPU, memory and interrupt errors must reach the host whatever the script does.
int hh_must_propagate(sbx_state *S, int status) {
    if (status == LUA_ERRMEM) S->memory_exceeded = 1;
    return S->deadline_exceeded || S->cpu_exceeded || S->memory_exceeded ||
           atomic_load_explicit(&S->interrupted, memory_order_relaxed);
}
