// What the files of the sandbox's C half share; private to this target. See CLuaSandbox.h
// for the contract and docs/SANDBOX-THREATS.md for why each piece exists. By topic:
//   sandbox.c  the group, its ticket lock, the scripts' states
//   alloc.c    the allocator: per-script ledgers, the group's pool of blocks
//   hook.c     the count hook: deadlines, interrupts, stalls, taking turns in the group
//   codec.c    buffers, the values that cross the sandbox's edge, log records
//   stdlib.c   the sandboxed standard library, the table of standard globals
//   proxies.c  read-only proxies, the trampolines into host functions and objects
//   run.c      protected runs: the prelude, loading a script, calls, restoring globals
// What one file shares with another carries the hh_ prefix.
#ifndef SANDBOX_INTERNAL_H
#define SANDBOX_INTERNAL_H

#include "CLuaSandbox.h"

#include <lauxlib.h>
#include <lua.h>
#include <lualib.h>

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

// Registry keys of the group: their addresses are unique light userdata.
extern const char hh_key_base, hh_key_base_list, hh_key_host, hh_key_public;

/// What one script's allocations come to. Every block names the ledger it is charged to,
/// so a block freed while another script runs (the collector is the group's) is credited
/// to its own script; a ledger outlives its script while any of its blocks lives.
typedef struct sbx_ledger {
    size_t used;
    size_t limit;
    size_t blocks;
    int closed;
    int worker_refused;  // the worker's cap refused it an allocation in the running call
    void *host;  // the script's host; NULL once the script is closed
    // Host objects the collector released while another script ran: handed to the host
    // at the owner's next run, since its host may be busy in a host call meanwhile.
    struct { int32_t class_id; uint64_t handle; } *releases;
    size_t release_count, release_capacity;
} sbx_ledger;

// Freed blocks of up to SBX_POOL_LARGEST bytes (with their header) stay with the group
// for its next allocations of the same size class instead of going back to malloc: a
// group's collector frees garbage in bursts and the next calls allocate as much again,
// far more than glibc's per-thread cache (7 blocks a size) holds, so most blocks went
// through malloc's slower bins, a quarter of the time of a worker's threads running
// Lua. Only the thread that holds the group allocates in its state, so no lock. The pool
// holds at most SBX_POOL_BYTES, beyond which freed blocks go back to malloc: a block of one
// class cannot serve another, so a script that filled its memory cap with blocks of one
// size after another would otherwise leave the worker holding its cap once per class.
#define SBX_POOL_STEP 16
#define SBX_POOL_LARGEST 512
#define SBX_POOL_BYTES (1 << 20)

typedef struct pooled_block {
    struct pooled_block *next;
} pooled_block;

struct sbx_state {
    sbx_group *G;
    lua_State *L;  // the script's thread; the group's main thread for the group's own runs
    int thread_ref, env_ref, exports_ref, objects_ref, classes_ref;
    sbx_ledger *ledger;
    int64_t deadline_ns;
    int deadline_exceeded;
    int64_t cpu_limit_ns;    // 0: none
    int64_t cpu_started_ns;  // the call's thread's CPU time when the call started
    int cpu_exceeded;
    int memory_exceeded;
    atomic_int interrupted;
    atomic_int waiting_for_group;  // in hh_enter, for the group another script holds
    int loaded;
    sbx_outcome *outcome;        // the running load or call's outcome
    sbx_buffer host_arguments;   // scratch buffers reused by the host trampoline, owned
    sbx_buffer host_results;     // here so a Lua error cannot leak them
    uint32_t log_records;
    int64_t entered_ns;  // when it last took its group
    int stall_reported;  // the stall callback was called for the running call
    // Its standard globals are restored before a call only if a run since they were last
    // restored may have changed them; a quiet worker restores them ahead of the next call
    // (sbx_group_tidy_idle), from the group's list of scripts that ran.
    int globals_changed;
    int awaiting_restore;  // on the group's `unrestored` list
    struct sbx_state *next_unrestored;
};

struct sbx_group {
    lua_State *L;
    // A ticket lock: scripts take turns in the order they asked, so the count hook can
    // hand the state to a script that waits.
    pthread_mutex_t mutex;
    pthread_cond_t turn;
    atomic_uint_fast64_t next_ticket, serving;
    sbx_state *current;  // whose code runs, with the lock held; NULL: the group's own
    sbx_state own;       // the group's setup and prelude, charged to `base`
    sbx_ledger base;
    int sealed;
    pooled_block *pool[SBX_POOL_LARGEST / SBX_POOL_STEP + 1];  // by capacity / SBX_POOL_STEP
    size_t pooled_bytes;
    size_t worker_slack;  // reserved from the worker's memory count and not used yet
    // The collector in idle time (sbx_group_tidy_idle): the state's size when it last
    // finished a cycle there, and whether it is in the middle of one.
    size_t collected_kb;
    int collecting_idle;
    sbx_state *unrestored;  // scripts that ran since their globals were last restored
};

// sandbox.c
extern void (*hh_stall_callback)(void);
void hh_group_lock(sbx_group *G);
int hh_group_trylock(sbx_group *G);
void hh_group_unlock(sbx_group *G);
void hh_enter(sbx_state *S);
void hh_leave(sbx_state *S);
sbx_state *hh_state_of(lua_State *L);

// alloc.c
void hh_ledger_free(sbx_ledger *ledger);
void *hh_capped_alloc(void *ud, void *ptr, size_t osize, size_t nsize);
void hh_worker_release_slack(sbx_group *G);

// hook.c
void hh_deadline_hook(lua_State *L, lua_Debug *ar);
int64_t hh_thread_cpu_ns(void);
int hh_must_propagate(sbx_state *S, int status);

// codec.c
int hh_set_text(sbx_buffer *b, const char *text, size_t length);
int hh_is_host_object(lua_State *L, int index);
const char *hh_encode_tuple(lua_State *L, int first, int last, sbx_buffer *b);
int hh_push_tuple(lua_State *L, const uint8_t *data, size_t length);

// stdlib.c
void hh_list_base(lua_State *L);
int hh_build_base(lua_State *L);

// proxies.c
void hh_make_readonly(lua_State *L, const char *name);
int hh_readonly_for_prelude(lua_State *L);
int hh_method_trampoline(lua_State *L);
int hh_object_release(lua_State *L);
void hh_deliver_releases(sbx_state *S);

#endif
