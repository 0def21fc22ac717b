// The C half of the Lua sandbox: everything that has to be C because it long-jumps,
// is a Lua macro, or runs inside Lua's own machinery (allocator, hook, protected calls).
// Values cross this boundary only as byte buffers in the sandbox value encoding, so no
// Lua error can ever unwind through a Swift frame.
#ifndef CLUA_SANDBOX_H
#define CLUA_SANDBOX_H

#include <stddef.h>
#include <stdint.h>
#include <time.h>

/// A growable byte buffer allocated with malloc (never with the script's allocator).
typedef struct sbx_buffer {
    uint8_t *data;
    size_t length;
    size_t capacity;
} sbx_buffer;

void sbx_buffer_free(sbx_buffer *buffer);
/// Appends bytes; returns 0, or -1 when malloc fails.
int sbx_buffer_append(sbx_buffer *buffer, const void *bytes, size_t length);

/// Tags of the value encoding shared by the C side, the Swift side and the worker protocol.
enum {
    SBX_TAG_NIL = 0,
    SBX_TAG_FALSE = 1,
    SBX_TAG_TRUE = 2,
    SBX_TAG_INTEGER = 3,
    SBX_TAG_NUMBER = 4,
    SBX_TAG_STRING = 5,
    SBX_TAG_TABLE = 6,
    /// A host object, only from host to Lua: u32 class id, u64 handle, then the class's
    /// description (u32-prefixed name, u32 method count, u32-prefixed method names),
    /// which the state reads the first time it meets the class.
    SBX_TAG_OBJECT = 7,
};

/// Nesting limit for values crossing the boundary, both ways.
#define SBX_MAX_DEPTH 32

typedef enum sbx_status {
    SBX_OK = 0,
    SBX_ERROR_RUNTIME = 1,
    SBX_ERROR_SYNTAX = 2,
    SBX_ERROR_MEMORY = 3,
    SBX_ERROR_DEADLINE = 4,
    SBX_ERROR_INTERRUPTED = 5,
    SBX_ERROR_VALUE = 6,
    /// The worker's scripts together reached the worker's cap (`sbx_set_worker_memory_limit`).
    SBX_ERROR_WORKER_MEMORY = 7,
    /// The call used up its CPU time (`cpu_limit_ns` of `sbx_call`).
    SBX_ERROR_CPU = 8,
} sbx_status;

/// Log levels recorded by `print` and host functions.
enum {
    SBX_LOG_PRINT = 0,
    SBX_LOG_DEBUG = 1,
    SBX_LOG_INFO = 2,
    SBX_LOG_WARN = 3,
    SBX_LOG_ERROR = 4,
};

/// What one load or call produced. The buffers belong to the caller after the call.
typedef struct sbx_outcome {
    sbx_status status;
    sbx_buffer results;    // encoded tuple of return values (SBX_OK)
    sbx_buffer message;    // error message
    sbx_buffer location;   // "file:line" of the innermost script frame, if any
    sbx_buffer traceback;  // Lua traceback at the error
    sbx_buffer logs;       // records: u8 level, u32 little-endian length, bytes
    uint32_t dropped_logs; // records refused by the per-call log limits
} sbx_outcome;

void sbx_outcome_free(sbx_outcome *outcome);

/// Called by the host-function trampoline. Writes an encoded tuple of results into `out`
/// and returns 0, or writes an error message into `out` and returns 1.
typedef int (*sbx_host_callback)(void *host, int32_t function_id,
                                 const uint8_t *arguments, size_t arguments_length,
                                 sbx_buffer *out);

/// Sets the process-wide host callback (once, before any state runs host functions).
void sbx_set_host_callback(sbx_host_callback callback);

/// Method number the object callback receives when a host object is collected or leaves
/// a `<close>` scope: release it; nothing is written and nothing raised.
#define SBX_METHOD_RELEASE (-1)

/// Called by the method trampoline of host objects, with the object's `handle` (its
/// `self`, already checked to be of `class_id`) and the other arguments encoded. Results
/// as for sbx_host_callback.
typedef int (*sbx_object_callback)(void *host, int32_t class_id, int32_t method, uint64_t handle,
                                   const uint8_t *arguments, size_t arguments_length,
                                   sbx_buffer *out);

/// Sets the process-wide object callback (once, before any state meets a host object).
void sbx_set_object_callback(sbx_object_callback callback);

/// A Lua state that scripts share: one heap, and one copy of the standard library, the
/// host functions and the prelude. Each script (an sbx_state) has its own globals,
/// memory cap, deadline and host. A group runs one script at a time, from any thread: a
/// script waiting in a host function, or one that reaches the count hook while another
/// waits, lets the next run.
typedef struct sbx_group sbx_group;

/// A script of a group.
typedef struct sbx_state sbx_state;

/// A new group; `host` is handed back to the host callback for the prelude's own calls.
/// NULL when it cannot be built.
sbx_group *sbx_group_open(void *host);
/// The group's own runs (the prelude), as host functions called there see them.
sbx_state *sbx_group_state(sbx_group *group);
/// Closes the group; every script of it must be closed first.
void sbx_group_close(sbx_group *group);
/// The bytes of freed blocks the group keeps for its next allocations (at most 1 MiB).
size_t sbx_group_pooled_bytes(sbx_group *group);
/// How many runs hold the group's state or wait for it.
int sbx_group_takers(sbx_group *group);
/// One step of the work a worker with nothing else to do spends on its next calls: first
/// restoring the standard globals of a few scripts that ran since theirs were restored
/// (so their next calls need not), then one step of the collector, once the state has
/// grown by a quarter (and at least 64 KiB) since the collector last finished a cycle
/// there (or while such a cycle is under way), so that the next calls find their garbage
/// collected and run no collection steps themselves. Never waits: -1 when a script holds
/// the group or waits for it; else 1 while there is more to do, 0 when there is nothing.
int sbx_group_tidy_idle(sbx_group *group);

/// A new script in `group` whose allocations are capped at `memory_limit` bytes. `host`
/// is handed back to the host callback. NULL when it cannot be built.
sbx_state *sbx_open(sbx_group *group, size_t memory_limit, void *host);
void sbx_close(sbx_state *state);

/// Adds `module.name` as a host function. Public modules become read-only globals of the
/// scripts; all modules are visible to the prelude through its `host` table.
/// Must be called before sbx_seal. Returns 0, or -1 on failure.
int sbx_add_host_function(sbx_group *group, const char *module, const char *name,
                          int32_t function_id, int is_public);

/// Freezes the scripts' standard globals. Called once, after host functions were added.
int sbx_seal(sbx_group *group);

/// Runs the trusted prelude, once per group: a text chunk with the standard globals,
/// `host` (every host module) and `readonly(t)`, called with one table whose entries
/// become extra globals of every script. Its returned table holds the entry points
/// `sbx_call` looks up first. Whatever it shares between scripts must be read-only.
void sbx_run_prelude(sbx_group *group, const char *chunk_name, const char *source,
                     size_t source_length, int64_t deadline_ns, sbx_outcome *outcome);

/// The same with the prelude compiled by `sbx_compile_stripped`: loading bytecode skips
/// the parser, and the state keeps no debug information for the prelude.
void sbx_run_compiled_prelude(sbx_group *group, const char *chunk_name, const uint8_t *bytecode,
                              size_t bytecode_length, int64_t deadline_ns, sbx_outcome *outcome);

/// Compiles trusted text to bytecode without debug information (never a script's: Lua
/// does not check bytecode). Returns 0, or -1 if it does not compile.
int sbx_compile_stripped(const char *chunk_name, const char *source, size_t source_length,
                         sbx_buffer *bytecode);

/// Loads and runs the script's main chunk; its first return value becomes the exports.
void sbx_load_script(sbx_state *state, const char *chunk_name, const char *source,
                     size_t source_length, int64_t deadline_ns, sbx_outcome *outcome);

/// Calls `entry` with an encoded tuple of arguments: the prelude's entry point
/// `entry(exports, ...)` when there is one, otherwise `exports[entry](...)`.
/// `deadline_ns` is on CLOCK_MONOTONIC; 0 means no deadline. `cpu_limit_ns` bounds the CPU
/// time the call's thread may use from its start (the count hook checks it); 0 means none.
void sbx_call(sbx_state *state, const char *entry, const uint8_t *arguments,
              size_t arguments_length, int64_t deadline_ns, int64_t cpu_limit_ns, sbx_outcome *outcome);

/// Asks the running call to stop at its next hook (thread-safe).
void sbx_interrupt(sbx_state *state);

/// The running call's deadline (0 for none), for host functions that block.
int64_t sbx_deadline(const sbx_state *state);

/// Whether the running call was asked to stop, for host functions that block.
int sbx_interrupted(const sbx_state *state);

/// Whether the state's call waits for its group, which another script's call holds (a C
/// function that runs on holds it for good): from any thread.
int sbx_waiting_for_group(const sbx_state *state);

/// Records a log line for the running call, subject to the per-call limits.
void sbx_log(sbx_state *state, int level, const char *message, size_t length);

/// Sets a function called on the thread of a running load or call when it may hold that
/// thread for a while: it must wait for its group, enters a host function, or has run
/// 100 µs (checked at the count hook). The worker writes the answers it holds back then.
void sbx_set_stall_callback(void (*callback)(void));

/// Bytes currently charged to the script.
size_t sbx_memory_used(const sbx_state *state);

/// Caps what every script of every group in this process may hold together, on top of each
/// script's own cap: an allocation past it fails as the script's own cap would, and the
/// call ends with SBX_ERROR_WORKER_MEMORY. SIZE_MAX (the default) means no cap.
void sbx_set_worker_memory_limit(size_t limit);

/// Bytes the scripts of every group in this process hold together.
size_t sbx_worker_memory_used(void);

/// Whether the script ran since its standard globals were last restored, so that its next
/// call restores them first (unless a quiet worker does it before: sbx_group_tidy_idle).
int sbx_globals_changed(sbx_state *state);

/// CLOCK_MONOTONIC in nanoseconds, the clock deadlines are measured on.
int64_t sbx_monotonic_ns(void);

/// The CPU time `clock` (a thread's clock from pthread_getcpuclockid) has counted, in
/// nanoseconds; -1 when it cannot be read.
int64_t sbx_cpu_clock_ns(clockid_t clock);


/// Asks the kernel to SIGKILL this process when its parent dies (prctl is variadic,
/// so Swift cannot call it). Returns 0 on success.
int sbx_die_with_parent(void);

/// A worker holds venue credentials: no core file of it (RLIMIT_CORE 0, hard limit too, so
/// a script's library cannot raise it), and not dumpable (no core through a core_pattern
/// pipe, no ptrace or /proc/PID/mem by other processes of its user). Returns 0 on success.
int sbx_forbid_core_dumps(void);

/// The cores this process may run on: its affinity mask (CPU_COUNT is a macro).
int sbx_available_cores(void);

/// Puts the calling thread in the SCHED_BATCH class: when another thread wakes it, it
/// does not preempt the waker (which goes on, say, reading more frames) but waits for a
/// free core or the waker's turn to end. 0, or -1 with errno set (SCHED_BATCH needs
/// _GNU_SOURCE, which Swift's Glibc module does not define).
int sbx_make_thread_batch(void);

#endif
