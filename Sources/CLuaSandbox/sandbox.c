// The sandbox's C half. See CLuaSandbox.h for the contract and
// ../shared/reference/lua-sandbox-threats.md for why each piece exists.
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

// Instructions between two hook checks: about 10 microseconds of Lua code.
#define SBX_HOOK_COUNT 1000
// How long a script keeps its group while another script waits for it.
#define SBX_GROUP_SLICE_NS 1000000
// Per call: at most this many log records and bytes; the rest are counted as dropped.
#define SBX_LOG_RECORDS 200
#define SBX_LOG_BYTES (64 * 1024)
#define SBX_LOG_RECORD_BYTES 4096
// Stack slots a script's thread keeps in use between calls. The collector shrinks every
// idle thread's stack to twice what it uses, and the next call grew it again: two blocks
// over 1 KiB per script per cycle, each of which made glibc consolidate its fast bins
// (a tenth of a worker's time in a 100-helper evaluate).
#define SBX_IDLE_STACK_SLOTS 48

// Registry keys of the group (addresses of these statics are unique light userdata).
// KEY_CLASSES also marks the metatables of host classes.
static const char KEY_BASE = 0, KEY_BASE_LIST = 0, KEY_HOST = 0, KEY_PUBLIC = 0, KEY_ENTRIES = 0, KEY_CLASSES = 0;

/// What one script's allocations come to. Every block names the ledger it is charged to,
/// so a block freed while another script runs (the collector is the group's) is credited
/// to its own script; a ledger outlives its script while any of its blocks lives.
typedef struct sbx_ledger {
    size_t used;
    size_t limit;
    size_t blocks;
    int closed;
    void *host;  // the script's host; NULL once the script is closed
    // Host objects the collector released while another script ran: handed to the host
    // at the owner's next run, since its host may be busy in a host call meanwhile.
    struct { int32_t class_id; uint64_t handle; } *releases;
    size_t release_count, release_capacity;
} sbx_ledger;

/// The header of every block: 16 bytes, so blocks keep malloc's alignment.
typedef struct block_header {
    sbx_ledger *ledger;
    size_t capacity;  // with the header, for a block of the group's pool; 0 for malloc's own
} block_header;

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
// How long a call runs before the stall callback is called from the count hook.
#define SBX_STALL_NS 100000
// Scripts whose globals a quiet worker restores in one step, between which a call can start.
#define SBX_RESTORES_PER_STEP 8
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
    int memory_exceeded;
    atomic_int interrupted;
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
    // The collector in idle time (sbx_group_tidy_idle): the state's size when it last
    // finished a cycle there, and whether it is in the middle of one.
    size_t collected_kb;
    int collecting_idle;
    sbx_state *unrestored;  // scripts that ran since their globals were last restored
};

static void (*stall_callback)(void);

void sbx_set_stall_callback(void (*callback)(void)) { stall_callback = callback; }

static void group_lock(sbx_group *G) {
    pthread_mutex_lock(&G->mutex);
    uint64_t ticket = atomic_fetch_add(&G->next_ticket, 1);
    if (atomic_load(&G->serving) != ticket && stall_callback) {
        pthread_mutex_unlock(&G->mutex);
        stall_callback();
        pthread_mutex_lock(&G->mutex);
    }
    while (atomic_load(&G->serving) != ticket) pthread_cond_wait(&G->turn, &G->mutex);
    pthread_mutex_unlock(&G->mutex);
}

/// Takes the lock only if nobody holds it or waits for it.
static int group_trylock(sbx_group *G) {
    pthread_mutex_lock(&G->mutex);
    uint64_t ticket = atomic_load(&G->next_ticket);
    int free = atomic_load(&G->serving) == ticket;
    if (free) atomic_store(&G->next_ticket, ticket + 1);
    pthread_mutex_unlock(&G->mutex);
    return free;
}

static void group_unlock(sbx_group *G) {
    pthread_mutex_lock(&G->mutex);
    atomic_fetch_add(&G->serving, 1);
    pthread_cond_broadcast(&G->turn);
    pthread_mutex_unlock(&G->mutex);
}

/// Runs `S` with the lock held: takes the lock and makes `S` the current script.
static void enter(sbx_state *S) {
    group_lock(S->G);
    S->G->current = S;
    S->entered_ns = sbx_monotonic_ns();
}

static void leave(sbx_state *S) {
    S->G->current = NULL;
    group_unlock(S->G);
}

static sbx_host_callback host_callback;
static sbx_object_callback object_callback;

void sbx_set_host_callback(sbx_host_callback callback) { host_callback = callback; }
void sbx_set_object_callback(sbx_object_callback callback) { object_callback = callback; }

int64_t sbx_monotonic_ns(void) {
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (int64_t)now.tv_sec * 1000000000 + now.tv_nsec;
}

// MARK: buffers

void sbx_buffer_free(sbx_buffer *buffer) {
    free(buffer->data);
    buffer->data = NULL;
    buffer->length = buffer->capacity = 0;
}

int sbx_buffer_append(sbx_buffer *buffer, const void *bytes, size_t length) {
    if (length > SIZE_MAX - buffer->length) return -1;
    size_t needed = buffer->length + length;
    if (needed > buffer->capacity) {
        size_t capacity = buffer->capacity ? buffer->capacity : 64;
        while (capacity < needed) capacity = capacity > SIZE_MAX / 2 ? needed : capacity * 2;
        uint8_t *data = realloc(buffer->data, capacity);
        if (!data) return -1;
        buffer->data = data;
        buffer->capacity = capacity;
    }
    if (length) memcpy(buffer->data + buffer->length, bytes, length);
    buffer->length = needed;
    return 0;
}

static int append_u8(sbx_buffer *b, uint8_t v) { return sbx_buffer_append(b, &v, 1); }

static int append_u32(sbx_buffer *b, uint32_t v) {
    uint8_t bytes[4] = {v & 0xff, (v >> 8) & 0xff, (v >> 16) & 0xff, (v >> 24) & 0xff};
    return sbx_buffer_append(b, bytes, 4);
}

static int append_u64(sbx_buffer *b, uint64_t v) {
    uint8_t bytes[8];
    for (int i = 0; i < 8; i++) bytes[i] = (v >> (8 * i)) & 0xff;
    return sbx_buffer_append(b, bytes, 8);
}

static void put_u32(uint8_t *at, uint32_t v) {
    for (int i = 0; i < 4; i++) at[i] = (v >> (8 * i)) & 0xff;
}

static int set_text(sbx_buffer *b, const char *text, size_t length) {
    b->length = 0;
    return sbx_buffer_append(b, text, length);
}

void sbx_outcome_free(sbx_outcome *o) {
    sbx_buffer_free(&o->results);
    sbx_buffer_free(&o->message);
    sbx_buffer_free(&o->location);
    sbx_buffer_free(&o->traceback);
    sbx_buffer_free(&o->logs);
}

// MARK: allocator, hook, state lookup

static void ledger_free(sbx_ledger *ledger) {
    free(ledger->releases);
    free(ledger);
}

static void ledger_debit(sbx_ledger *ledger, size_t size) {
    ledger->used -= size;
    if (--ledger->blocks == 0 && ledger->closed) ledger_free(ledger);
}

/// The pool capacity of a block of `bytes` (with its header); 0 when malloc keeps it.
static size_t pool_capacity(size_t bytes) {
    size_t capacity = (bytes + SBX_POOL_STEP - 1) & ~(size_t)(SBX_POOL_STEP - 1);
    return capacity <= SBX_POOL_LARGEST ? capacity : 0;
}

static block_header *block_new(sbx_group *G, size_t bytes) {
    size_t capacity = pool_capacity(bytes);
    block_header *block;
    if (capacity && G->pool[capacity / SBX_POOL_STEP]) {
        pooled_block *reused = G->pool[capacity / SBX_POOL_STEP];
        G->pool[capacity / SBX_POOL_STEP] = reused->next;
        // The class's next block is likely among the next allocations, cold after a pause.
        if (reused->next) __builtin_prefetch(reused->next, 1);
        G->pooled_bytes -= capacity;
        block = (block_header *)reused;
    } else {
        block = malloc(capacity ? capacity : bytes);
    }
    if (block) block->capacity = capacity;
    return block;
}

static void block_release(sbx_group *G, block_header *block) {
    if (!block->capacity || G->pooled_bytes + block->capacity > SBX_POOL_BYTES) {
        free(block);
        return;
    }
    G->pooled_bytes += block->capacity;
    pooled_block *freed = (pooled_block *)block;
    freed->next = G->pool[block->capacity / SBX_POOL_STEP];
    G->pool[block->capacity / SBX_POOL_STEP] = freed;
}

static int restore_some(sbx_group *G, int count);

int sbx_group_tidy_idle(sbx_group *G) {
    if (!group_trylock(G)) return -1;
    int more = restore_some(G, SBX_RESTORES_PER_STEP);
    if (!more) {
        size_t kb = (size_t)lua_gc(G->L, LUA_GCCOUNT);
        if (G->collecting_idle || kb >= G->collected_kb + G->collected_kb / 4 + 64) {
            G->collecting_idle = 1;
            if (lua_gc(G->L, LUA_GCSTEP, 0)) {
                G->collecting_idle = 0;
                G->collected_kb = (size_t)lua_gc(G->L, LUA_GCCOUNT);
            } else {
                more = 1;
            }
        }
    }
    group_unlock(G);
    return more;
}

int sbx_group_takers(sbx_group *G) {
    return (int)(atomic_load(&G->next_ticket) - atomic_load(&G->serving));
}

size_t sbx_group_pooled_bytes(sbx_group *G) {
    group_lock(G);
    size_t bytes = G->pooled_bytes;
    group_unlock(G);
    return bytes;
}

/// A block of `bytes` with what `header`'s block holds, in place when the size class
/// stays the same; NULL when there is no memory (the old block is then unchanged).
static block_header *block_resize(sbx_group *G, block_header *header, size_t old, size_t bytes) {
    size_t capacity = pool_capacity(bytes);
    if (capacity && capacity == header->capacity) return header;
    if (!capacity && !header->capacity) return realloc(header, bytes);
    block_header *block = block_new(G, bytes);
    if (!block) return NULL;
    size_t kept = bytes - sizeof *header;
    memcpy(block + 1, header + 1, old < kept ? old : kept);
    block->ledger = header->ledger;
    block_release(G, header);
    return block;
}

/// New blocks are charged to the running script; a resized block stays with its own.
static void *capped_alloc(void *ud, void *ptr, size_t osize, size_t nsize) {
    sbx_group *G = ud;
    block_header *header = ptr ? (block_header *)ptr - 1 : NULL;
    if (nsize == 0) {
        if (header) {
            ledger_debit(header->ledger, osize);
            block_release(G, header);
        }
        return NULL;
    }
    sbx_ledger *ledger = header ? header->ledger : G->current ? G->current->ledger : &G->base;
    size_t old = header ? osize : 0;
    // Written so it cannot overflow: used <= limit always holds.
    if (nsize > old && nsize - old > ledger->limit - ledger->used) return NULL;
    if (nsize > SIZE_MAX - sizeof *header - SBX_POOL_STEP) return NULL;
    block_header *block = header ? block_resize(G, header, old, sizeof *header + nsize)
                                 : block_new(G, sizeof *header + nsize);
    if (!block) return nsize <= old ? ptr : NULL;  // never fail a shrink
    if (!header) {
        block->ledger = ledger;
        ledger->blocks++;
    }
    ledger->used = ledger->used - old + nsize;
    return block + 1;
}

static sbx_group *group_of(lua_State *L) {
    void *ud;
    lua_getallocf(L, &ud);
    return ud;
}

/// The script whose code runs (the group's own state during setup and the prelude).
static sbx_state *state_of(lua_State *L) {
    sbx_group *G = group_of(L);
    return G->current ? G->current : &G->own;
}

static void deadline_hook(lua_State *L, lua_Debug *ar) {
    (void)ar;
    sbx_state *S = state_of(L);
    if (atomic_load_explicit(&S->interrupted, memory_order_relaxed)) {
        lua_pushliteral(L, "cancelled");
        lua_error(L);
    }
    int64_t now = sbx_monotonic_ns();
    if (S->deadline_ns && !S->deadline_exceeded && now >= S->deadline_ns)
        S->deadline_exceeded = 1;
    if (stall_callback && !S->stall_reported && now - S->entered_ns >= SBX_STALL_NS) {
        S->stall_reported = 1;
        stall_callback();
    }
    // Raised again at every later hook, so a pcall that swallows it gains nothing. The
    // message handler records where it struck.
    if (S->deadline_exceeded) {
        lua_pushliteral(L, "deadline exceeded");
        lua_error(L);
    }
    // Held for a slice while another script waits: let it run, so a loop cannot hold up
    // the group (a short call finishes first, sparing two thread switches). Never on the
    // main thread, which every script's setup uses.
    sbx_group *G = S->G;
    if (G->current == S && L != G->L && atomic_load(&G->next_ticket) - atomic_load(&G->serving) > 1 &&
        now - S->entered_ns >= SBX_GROUP_SLICE_NS) {
        leave(S);
        enter(S);
    }
}

/// Deadline, memory and interrupt errors must reach the host whatever the script does.
static int must_propagate(sbx_state *S, int status) {
    if (status == LUA_ERRMEM) S->memory_exceeded = 1;
    return S->deadline_exceeded || S->memory_exceeded ||
           atomic_load_explicit(&S->interrupted, memory_order_relaxed);
}

// MARK: value encoding

static const char *encode_value(lua_State *L, int index, sbx_buffer *b, int depth,
                                const void **path);

/// Whether the value at `index` is a host object (its metatable carries the class mark).
static int is_host_object(lua_State *L, int index) {
    if (lua_type(L, index) != LUA_TUSERDATA || !lua_checkstack(L, 2) || !lua_getmetatable(L, index))
        return 0;
    int marked = lua_rawgetp(L, -1, &KEY_CLASSES) == LUA_TBOOLEAN;
    lua_pop(L, 2);
    return marked;
}

static const char *encode_table(lua_State *L, int index, sbx_buffer *b, int depth,
                                const void **path) {
    const void *identity = lua_topointer(L, index);
    for (int i = 0; i < depth; i++)
        if (path[i] == identity) return "a cyclic table cannot leave the sandbox";
    if (depth >= SBX_MAX_DEPTH) return "a table nested too deeply to leave the sandbox";
    if (!lua_checkstack(L, 3)) return "out of stack space while reading a table";
    path[depth] = identity;
    if (append_u8(b, SBX_TAG_TABLE) || append_u32(b, 0)) return "out of memory";
    size_t count_at = b->length - 4;
    uint32_t count = 0;
    lua_pushnil(L);
    while (lua_next(L, index)) {  // raw traversal: no __pairs, no __index
        int top = lua_gettop(L);
        const char *error = encode_value(L, top - 1, b, depth + 1, path);
        if (!error) error = encode_value(L, top, b, depth + 1, path);
        if (error) {
            lua_settop(L, top - 2);
            return error;
        }
        lua_pop(L, 1);
        count++;
    }
    put_u32(b->data + count_at, count);
    return NULL;
}

static const char *encode_value(lua_State *L, int index, sbx_buffer *b, int depth,
                                const void **path) {
    int fail = 0;
    switch (lua_type(L, index)) {
    case LUA_TNIL: fail = append_u8(b, SBX_TAG_NIL); break;
    case LUA_TBOOLEAN:
        fail = append_u8(b, lua_toboolean(L, index) ? SBX_TAG_TRUE : SBX_TAG_FALSE);
        break;
    case LUA_TNUMBER:
        if (lua_isinteger(L, index)) {
            fail = append_u8(b, SBX_TAG_INTEGER) ||
                   append_u64(b, (uint64_t)lua_tointeger(L, index));
        } else {
            lua_Number n = lua_tonumber(L, index);
            uint64_t bits;
            memcpy(&bits, &n, sizeof bits);
            fail = append_u8(b, SBX_TAG_NUMBER) || append_u64(b, bits);
        }
        break;
    case LUA_TSTRING: {
        size_t length;
        const char *s = lua_tolstring(L, index, &length);  // a string: no conversion
        if (length > UINT32_MAX) return "a string too long to leave the sandbox";
        fail = append_u8(b, SBX_TAG_STRING) || append_u32(b, (uint32_t)length) ||
               sbx_buffer_append(b, s, length);
        break;
    }
    case LUA_TTABLE: return encode_table(L, index, b, depth, path);
    case LUA_TUSERDATA:
        if (is_host_object(L, index))
            return "a host object cannot be copied out of its Lua state; only its methods use it";
        return "userdata";
    default: return lua_typename(L, lua_type(L, index));
    }
    return fail ? "out of memory" : NULL;
}

/// Encodes the stack slots first..last as a tuple. On failure returns a message; a bare
/// type name means a value of that type cannot leave the sandbox.
static const char *encode_tuple(lua_State *L, int first, int last, sbx_buffer *b) {
    const void *path[SBX_MAX_DEPTH];
    b->length = 0;
    if (append_u32(b, (uint32_t)(last >= first ? last - first + 1 : 0))) return "out of memory";
    for (int i = first; i <= last; i++) {
        const char *error = encode_value(L, i, b, 0, path);
        if (error) return error;
    }
    return NULL;
}

typedef struct reader {
    const uint8_t *data;
    size_t length;
    size_t position;
} reader;

static int read_bytes(reader *r, void *out, size_t n) {
    if (r->length - r->position < n) return -1;
    memcpy(out, r->data + r->position, n);
    r->position += n;
    return 0;
}

static int read_u32(reader *r, uint32_t *v) {
    uint8_t b[4];
    if (read_bytes(r, b, 4)) return -1;
    *v = (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 | (uint32_t)b[3] << 24;
    return 0;
}

static int read_u64(reader *r, uint64_t *v) {
    uint8_t b[8];
    if (read_bytes(r, b, 8)) return -1;
    *v = 0;
    for (int i = 0; i < 8; i++) *v |= (uint64_t)b[i] << (8 * i);
    return 0;
}

static int read_text(reader *r, const char **text, uint32_t *length) {
    if (read_u32(r, length) || r->length - r->position < *length) return -1;
    *text = (const char *)r->data + r->position;
    r->position += *length;
    return 0;
}

static int method_trampoline(lua_State *L);
static int object_release(lua_State *L);

/// Pushes the metatable of host class `class_id`, building it from the description in
/// `r` the first time; the description is consumed either way.
static int push_class(lua_State *L, reader *r, uint32_t class_id) {
    const char *name, *method;
    uint32_t name_length, method_length, method_count;
    if (read_text(r, &name, &name_length) || read_u32(r, &method_count) ||
        method_count > r->length - r->position)
        return -1;
    sbx_state *S = state_of(L);
    lua_rawgeti(L, LUA_REGISTRYINDEX, S->classes_ref);
    if (lua_rawgeti(L, -1, class_id) == LUA_TTABLE) {
        lua_remove(L, -2);
        for (uint32_t i = 0; i < method_count; i++)
            if (read_text(r, &method, &method_length)) return -1;
        return 0;
    }
    lua_pop(L, 1);
    lua_createtable(L, 0, 6);
    int metatable = lua_gettop(L);
    lua_createtable(L, 0, (int)method_count);
    for (uint32_t i = 0; i < method_count; i++) {
        if (read_text(r, &method, &method_length)) return -1;
        lua_pushlstring(L, method, method_length);
        lua_pushinteger(L, class_id);
        lua_pushinteger(L, i);
        lua_pushlstring(L, name, name_length);
        lua_pushfstring(L, "%s:%s", lua_tostring(L, -1), lua_tostring(L, -4));
        lua_pushcclosure(L, method_trampoline, 4);
        lua_rawset(L, -3);
    }
    lua_setfield(L, metatable, "__index");
    lua_pushlstring(L, name, name_length);
    lua_setfield(L, metatable, "__name");
    lua_pushliteral(L, "locked");
    lua_setfield(L, metatable, "__metatable");
    lua_pushinteger(L, class_id);
    lua_pushlightuserdata(L, S->ledger);  // lives as long as this closure, charged to it
    lua_pushcclosure(L, object_release, 2);
    lua_pushvalue(L, -1);
    lua_setfield(L, metatable, "__gc");
    lua_setfield(L, metatable, "__close");
    lua_pushboolean(L, 1);
    lua_rawsetp(L, metatable, &KEY_CLASSES);  // the mark of a host class
    lua_pushvalue(L, metatable);
    lua_rawseti(L, -3, class_id);
    lua_remove(L, -2);
    return 0;
}

/// Pushes the host object `handle`: the userdata the state already holds for it, or a
/// new one of class `class_id`.
static int push_object(lua_State *L, reader *r) {
    uint32_t class_id;
    uint64_t handle;
    if (read_u32(r, &class_id) || read_u64(r, &handle) || handle > (uint64_t)LUA_MAXINTEGER ||
        !lua_checkstack(L, 10))
        return -1;
    lua_rawgeti(L, LUA_REGISTRYINDEX, state_of(L)->objects_ref);
    if (lua_rawgeti(L, -1, (lua_Integer)handle) == LUA_TUSERDATA) {
        lua_remove(L, -2);
        if (push_class(L, r, class_id)) return -1;  // the description is read and dropped
        lua_pop(L, 1);
        return 0;
    }
    lua_pop(L, 1);
    uint64_t *payload = lua_newuserdatauv(L, sizeof *payload, 0);
    *payload = handle;
    if (push_class(L, r, class_id)) return -1;
    lua_setmetatable(L, -2);
    lua_pushvalue(L, -1);
    lua_rawseti(L, -3, (lua_Integer)handle);
    lua_remove(L, -2);
    return 0;
}

/// Pushes one decoded value. Lua allocation errors long-jump from here, which is fine:
/// only C frames lie between this and the protected call.
static int push_value(lua_State *L, reader *r, int depth) {
    uint8_t tag;
    if (depth > SBX_MAX_DEPTH || !lua_checkstack(L, 3) || read_bytes(r, &tag, 1)) return -1;
    switch (tag) {
    case SBX_TAG_NIL: lua_pushnil(L); return 0;
    case SBX_TAG_FALSE: lua_pushboolean(L, 0); return 0;
    case SBX_TAG_TRUE: lua_pushboolean(L, 1); return 0;
    case SBX_TAG_INTEGER: {
        uint64_t v;
        if (read_u64(r, &v)) return -1;
        lua_pushinteger(L, (lua_Integer)v);
        return 0;
    }
    case SBX_TAG_NUMBER: {
        uint64_t bits;
        lua_Number n;
        if (read_u64(r, &bits)) return -1;
        memcpy(&n, &bits, sizeof n);
        lua_pushnumber(L, n);
        return 0;
    }
    case SBX_TAG_STRING: {
        uint32_t length;
        if (read_u32(r, &length) || r->length - r->position < length) return -1;
        lua_pushlstring(L, (const char *)r->data + r->position, length);
        r->position += length;
        return 0;
    }
    case SBX_TAG_TABLE: {
        uint32_t count;
        if (read_u32(r, &count) || count > r->length - r->position) return -1;
        lua_createtable(L, 0, (int)(count > 1024 ? 1024 : count));
        for (uint32_t i = 0; i < count; i++) {
            if (push_value(L, r, depth + 1) || push_value(L, r, depth + 1)) return -1;
            if (lua_isnil(L, -2) || (lua_type(L, -2) == LUA_TNUMBER && lua_tonumber(L, -2) != lua_tonumber(L, -2)))
                return -1;  // nil or NaN key
            lua_rawset(L, -3);
        }
        return 0;
    }
    case SBX_TAG_OBJECT: return push_object(L, r);
    default: return -1;
    }
}

static int push_tuple(lua_State *L, const uint8_t *data, size_t length) {
    reader r = {data, length, 0};
    uint32_t count;
    if (read_u32(&r, &count) || count > length) luaL_error(L, "malformed values from the host");
    if (!lua_checkstack(L, (int)count + 3)) luaL_error(L, "too many values from the host");
    for (uint32_t i = 0; i < count; i++)
        if (push_value(L, &r, 0)) luaL_error(L, "malformed values from the host");
    return (int)count;
}

// MARK: logs

void sbx_log(sbx_state *S, int level, const char *message, size_t length) {
    sbx_outcome *o = S->outcome;
    if (!o) return;
    if (length > SBX_LOG_RECORD_BYTES) length = SBX_LOG_RECORD_BYTES;
    if (S->log_records >= SBX_LOG_RECORDS || o->logs.length + length + 5 > SBX_LOG_BYTES) {
        o->dropped_logs++;
        return;
    }
    if (append_u8(&o->logs, (uint8_t)level) || append_u32(&o->logs, (uint32_t)length) ||
        sbx_buffer_append(&o->logs, message, length)) {
        o->dropped_logs++;
        return;
    }
    S->log_records++;
}

// MARK: sandboxed replacements of standard functions

static int finish_pcall(lua_State *L, int status, lua_KContext extra) {
    if (status != LUA_OK && status != LUA_YIELD) {
        if (must_propagate(state_of(L), status)) return lua_error(L);
        lua_pushboolean(L, 0);
        lua_pushvalue(L, -2);
        return 2;
    }
    return lua_gettop(L) - (int)extra;
}

static int sandbox_pcall(lua_State *L) {
    luaL_checkany(L, 1);
    lua_pushboolean(L, 1);
    lua_insert(L, 1);
    int status = lua_pcallk(L, lua_gettop(L) - 2, LUA_MULTRET, 0, 0, finish_pcall);
    return finish_pcall(L, status, 0);
}

static int sandbox_xpcall(lua_State *L) {
    int n = lua_gettop(L);
    luaL_checktype(L, 2, LUA_TFUNCTION);
    lua_pushboolean(L, 1);
    lua_pushvalue(L, 1);
    lua_rotate(L, 3, 2);
    int status = lua_pcallk(L, n - 2, LUA_MULTRET, 2, 2, finish_pcall);
    return finish_pcall(L, status, 2);
}

/// coroutine.resume's core; on error leaves the error object on L and returns -1.
static int resume_coroutine(lua_State *L, lua_State *co, int nargs) {
    if (!lua_checkstack(co, nargs)) {
        lua_pushliteral(L, "too many arguments to resume");
        return -1;
    }
    lua_xmove(L, co, nargs);
    int nresults;
    int status = lua_resume(co, L, nargs, &nresults);
    if (status == LUA_OK || status == LUA_YIELD) {
        if (!lua_checkstack(L, nresults + 1)) {
            lua_pop(co, nresults);
            lua_pushliteral(L, "too many results to resume");
            return -1;
        }
        lua_xmove(co, L, nresults);
        return nresults;
    }
    lua_xmove(co, L, 1);
    if (must_propagate(state_of(L), status)) lua_error(L);
    return -1;
}

static int sandbox_resume(lua_State *L) {
    lua_State *co = lua_tothread(L, 1);
    luaL_argexpected(L, co, 1, "coroutine");
    int n = resume_coroutine(L, co, lua_gettop(L) - 1);
    if (n < 0) {
        lua_pushboolean(L, 0);
        lua_insert(L, -2);
        return 2;
    }
    lua_pushboolean(L, 1);
    lua_insert(L, -(n + 1));
    return n + 1;
}

static int wrapped_coroutine(lua_State *L) {
    lua_State *co = lua_tothread(L, lua_upvalueindex(1));
    int n = resume_coroutine(L, co, lua_gettop(L));
    if (n < 0) {
        int status = lua_status(co);
        if (status != LUA_OK && status != LUA_YIELD) {
            lua_resetthread(co);  // close its to-be-closed variables
            lua_xmove(co, L, 1);
        }
        if (lua_type(L, -1) == LUA_TSTRING) {
            luaL_where(L, 1);
            lua_insert(L, -2);
            lua_concat(L, 2);
        }
        return lua_error(L);
    }
    return n;
}

static int sandbox_wrap(lua_State *L) {
    luaL_checktype(L, 1, LUA_TFUNCTION);
    lua_State *co = lua_newthread(L);
    lua_pushvalue(L, 1);
    lua_xmove(L, co, 1);
    lua_pushcclosure(L, wrapped_coroutine, 1);
    return 1;
}

static int sandbox_load(lua_State *L) {
    size_t length;
    if (lua_type(L, 1) != LUA_TSTRING)
        return luaL_argerror(L, 1, "only source text can be loaded in the sandbox");
    const char *source = lua_tolstring(L, 1, &length);
    const char *chunk_name = luaL_optstring(L, 2, source);
    int has_env = !lua_isnone(L, 4);
    if (luaL_loadbufferx(L, source, length, chunk_name, "t") != LUA_OK) {
        lua_pushnil(L);
        lua_insert(L, -2);
        return 2;
    }
    if (has_env) lua_pushvalue(L, 4);
    else lua_rawgeti(L, LUA_REGISTRYINDEX, state_of(L)->env_ref);  // the script's own globals
    lua_setupvalue(L, -2, 1);
    return 1;
}

static int sandbox_setmetatable(lua_State *L) {
    if (lua_type(L, 2) == LUA_TTABLE) {
        lua_pushliteral(L, "__gc");
        if (lua_rawget(L, 2) != LUA_TNIL)
            return luaL_error(L, "__gc metamethods are not allowed in the sandbox");
        lua_pop(L, 1);
    }
    lua_pushvalue(L, lua_upvalueindex(1));
    lua_insert(L, 1);
    lua_call(L, lua_gettop(L) - 1, 1);
    return 1;
}

static int sandbox_collectgarbage(lua_State *L) {
    const char *option = luaL_optstring(L, 1, "collect");
    if (strcmp(option, "count") != 0)
        return luaL_error(L, "collectgarbage('%s') is not allowed in the sandbox; only 'count' is",
                          option);
    lua_pushnumber(L, (lua_Number)state_of(L)->ledger->used / 1024);
    return 1;
}

static int sandbox_print(lua_State *L) {
    int n = lua_gettop(L);
    luaL_Buffer b;
    luaL_buffinit(L, &b);
    for (int i = 1; i <= n; i++) {
        if (i > 1) luaL_addchar(&b, '\t');
        luaL_tolstring(L, i, NULL);  // may run __tostring: we are inside a protected call
        luaL_addvalue(&b);
    }
    luaL_pushresult(&b);
    size_t length;
    const char *line = lua_tolstring(L, -1, &length);
    sbx_log(state_of(L), SBX_LOG_PRINT, line, length);
    return 0;
}

static int readonly_newindex(lua_State *L) {
    return luaL_error(L, "attempt to modify the read-only library '%s'",
                      lua_tostring(L, lua_upvalueindex(1)));
}

// __pairs of a read-only proxy: iterate the library itself.
static int readonly_pairs(lua_State *L) {
    lua_pushvalue(L, lua_upvalueindex(2));  // next
    lua_pushvalue(L, lua_upvalueindex(1));  // the library
    lua_pushnil(L);
    return 3;
}

/// Replaces the table on top of the stack with a read-only userdata proxy of it:
/// `rawset` cannot reach a userdata, and its metatable is locked.
static void make_readonly(lua_State *L, const char *name) {
    int library = lua_gettop(L);
    lua_newuserdatauv(L, 0, 0);
    lua_createtable(L, 0, 5);
    lua_pushvalue(L, library);
    lua_setfield(L, -2, "__index");
    lua_pushstring(L, name);
    lua_pushcclosure(L, readonly_newindex, 1);
    lua_setfield(L, -2, "__newindex");
    lua_pushvalue(L, library);
    lua_rawgetp(L, LUA_REGISTRYINDEX, &KEY_BASE);
    lua_getfield(L, -1, "next");
    lua_remove(L, -2);
    lua_pushcclosure(L, readonly_pairs, 2);
    lua_setfield(L, -2, "__pairs");
    lua_pushliteral(L, "read-only");
    lua_setfield(L, -2, "__metatable");
    lua_setmetatable(L, -2);
    lua_replace(L, library);
}

static int readonly_for_prelude(lua_State *L) {
    luaL_checktype(L, 1, LUA_TTABLE);
    const char *name = luaL_optstring(L, 2, "table");
    lua_settop(L, 1);
    make_readonly(L, name);
    return 1;
}

// MARK: building the sandbox

/// Copies the table of standard globals into one sequence, each key then its value, for
/// `reset_globals`: walking it reads an array, where `lua_next` on the table looks each key
/// up again to find the next. Called, as the group's own code, whenever the table changes.
static void list_base(lua_State *L) {
    lua_rawgetp(L, LUA_REGISTRYINDEX, &KEY_BASE);
    lua_newtable(L);
    lua_Integer count = 0;
    lua_pushnil(L);
    while (lua_next(L, -3)) {
        lua_pushvalue(L, -2);
        lua_rawseti(L, -4, ++count);  // the key
        lua_rawseti(L, -3, ++count);  // its value
    }
    lua_rawsetp(L, LUA_REGISTRYINDEX, &KEY_BASE_LIST);
    lua_pop(L, 1);
}

static const char *const base_functions[] = {
    "assert", "error", "getmetatable", "ipairs", "next", "pairs", "rawequal", "rawget",
    "rawlen", "rawset", "select", "tonumber", "tostring", "type", "_VERSION", NULL};

static const char *const os_functions[] = {"clock", "time", "date", "difftime", NULL};

/// Builds the table of standard globals every script starts each call with.
static int build_base(lua_State *L) {
    luaL_requiref(L, LUA_GNAME, luaopen_base, 1);
    luaL_requiref(L, LUA_STRLIBNAME, luaopen_string, 0);
    luaL_requiref(L, LUA_TABLIBNAME, luaopen_table, 0);
    luaL_requiref(L, LUA_MATHLIBNAME, luaopen_math, 0);
    luaL_requiref(L, LUA_UTF8LIBNAME, luaopen_utf8, 0);
    luaL_requiref(L, LUA_COLIBNAME, luaopen_coroutine, 0);
    luaL_requiref(L, LUA_OSLIBNAME, luaopen_os, 0);
    int os = lua_gettop(L), coroutine = os - 1, utf8 = os - 2, math = os - 3,
        table = os - 4, string = os - 5, globals = os - 6;

    lua_newtable(L);
    int base = lua_gettop(L);
    for (const char *const *name = base_functions; *name; name++) {
        lua_getfield(L, globals, *name);
        lua_setfield(L, base, *name);
    }
    lua_pushcfunction(L, sandbox_pcall);
    lua_setfield(L, base, "pcall");
    lua_pushcfunction(L, sandbox_xpcall);
    lua_setfield(L, base, "xpcall");
    lua_pushcfunction(L, sandbox_load);
    lua_setfield(L, base, "load");
    lua_pushcfunction(L, sandbox_collectgarbage);
    lua_setfield(L, base, "collectgarbage");
    lua_pushcfunction(L, sandbox_print);
    lua_setfield(L, base, "print");
    lua_getfield(L, globals, "setmetatable");
    lua_pushcclosure(L, sandbox_setmetatable, 1);
    lua_setfield(L, base, "setmetatable");

    // string: no dump; its metatable (shared by every string) is locked.
    lua_pushnil(L);
    lua_setfield(L, string, "dump");
    lua_pushliteral(L, "");
    lua_getmetatable(L, -1);
    lua_pushliteral(L, "protected");
    lua_setfield(L, -2, "__metatable");
    lua_pop(L, 2);

    lua_pushcfunction(L, sandbox_resume);
    lua_setfield(L, coroutine, "resume");
    lua_pushcfunction(L, sandbox_wrap);
    lua_setfield(L, coroutine, "wrap");

    lua_newtable(L);
    for (const char *const *name = os_functions; *name; name++) {
        lua_getfield(L, os, *name);
        lua_setfield(L, -2, *name);
    }
    lua_replace(L, os);

    lua_pushvalue(L, base);
    lua_rawsetp(L, LUA_REGISTRYINDEX, &KEY_BASE);

    const struct { int index; const char *name; } libraries[] = {
        {string, LUA_STRLIBNAME}, {table, LUA_TABLIBNAME}, {math, LUA_MATHLIBNAME},
        {utf8, LUA_UTF8LIBNAME}, {coroutine, LUA_COLIBNAME}, {os, LUA_OSLIBNAME}};
    for (size_t i = 0; i < sizeof libraries / sizeof libraries[0]; i++) {
        lua_pushvalue(L, libraries[i].index);
        make_readonly(L, libraries[i].name);
        lua_setfield(L, base, libraries[i].name);
    }

    // Nothing reaches the real global table, but empty it all the same.
    lua_newtable(L);
    lua_rawseti(L, LUA_REGISTRYINDEX, LUA_RIDX_GLOBALS);
    lua_newtable(L);
    lua_rawsetp(L, LUA_REGISTRYINDEX, &KEY_HOST);
    lua_newtable(L);
    lua_rawsetp(L, LUA_REGISTRYINDEX, &KEY_PUBLIC);
    list_base(L);
    return 0;
}

sbx_group *sbx_group_open(void *host) {
    sbx_group *G = calloc(1, sizeof *G);
    if (!G) return NULL;
    pthread_mutex_init(&G->mutex, NULL);
    pthread_cond_init(&G->turn, NULL);
    atomic_init(&G->next_ticket, 0);
    atomic_init(&G->serving, 0);
    G->base.limit = SIZE_MAX;
    G->base.host = host;
    G->own.G = G;
    G->own.ledger = &G->base;
    atomic_init(&G->own.interrupted, 0);
    G->L = lua_newstate(capped_alloc, G);
    if (!G->L) {
        pthread_cond_destroy(&G->turn);
        pthread_mutex_destroy(&G->mutex);
        free(G);
        return NULL;
    }
    lua_State *L = G->own.L = G->L;
    // Every thread copies this hook from its creator, so it is set before any script runs.
    lua_sethook(L, deadline_hook, LUA_MASKCOUNT, SBX_HOOK_COUNT);
    lua_pushcfunction(L, build_base);
    if (lua_pcall(L, 0, 0, 0) != LUA_OK) {
        sbx_group_close(G);
        return NULL;
    }
    return G;
}

sbx_state *sbx_group_state(sbx_group *G) { return &G->own; }

void sbx_group_close(sbx_group *G) {
    if (!G) return;
    // No script can own a finalizer (__gc is refused), so closing cannot hang; the only
    // finalizers are host objects', and their scripts are closed, so they do nothing.
    lua_close(G->L);
    for (size_t class = 0; class < sizeof G->pool / sizeof G->pool[0]; class++) {
        while (G->pool[class]) {
            pooled_block *block = G->pool[class];
            G->pool[class] = block->next;
            free(block);
        }
    }
    sbx_buffer_free(&G->own.host_arguments);
    sbx_buffer_free(&G->own.host_results);
    free(G->base.releases);
    pthread_cond_destroy(&G->turn);
    pthread_mutex_destroy(&G->mutex);
    free(G);
}

/// A script's thread and tables, charged to it; in a protected call.
static int open_script(lua_State *L) {
    sbx_state *S = lua_touserdata(L, 1);
    lua_newthread(L);
    S->L = lua_tothread(L, -1);
    S->thread_ref = luaL_ref(L, LUA_REGISTRYINDEX);
    lua_newtable(L);  // globals, filled when the script loads
    S->env_ref = luaL_ref(L, LUA_REGISTRYINDEX);
    lua_newtable(L);  // host classes by id
    S->classes_ref = luaL_ref(L, LUA_REGISTRYINDEX);
    lua_newtable(L);  // host objects by handle, which must not keep them alive
    lua_createtable(L, 0, 1);
    lua_pushliteral(L, "v");
    lua_setfield(L, -2, "__mode");
    lua_setmetatable(L, -2);
    S->objects_ref = luaL_ref(L, LUA_REGISTRYINDEX);
    return 0;
}

sbx_state *sbx_open(sbx_group *G, size_t memory_limit, void *host) {
    sbx_state *S = calloc(1, sizeof *S);
    sbx_ledger *ledger = calloc(1, sizeof *ledger);
    if (!S || !ledger) {
        free(S);
        free(ledger);
        return NULL;
    }
    ledger->limit = memory_limit;
    ledger->host = host;
    S->G = G;
    S->ledger = ledger;
    S->thread_ref = S->env_ref = S->exports_ref = S->objects_ref = S->classes_ref = LUA_NOREF;
    atomic_init(&S->interrupted, 0);
    enter(S);
    lua_State *L = G->L;
    lua_pushcfunction(L, open_script);
    lua_pushlightuserdata(L, S);
    int status = lua_pcall(L, 1, 0, 0);
    lua_settop(L, 0);
    leave(S);
    if (status != LUA_OK) {
        sbx_close(S);
        return NULL;
    }
    return S;
}

void sbx_close(sbx_state *S) {
    if (!S) return;
    sbx_group *G = S->G;
    group_lock(G);
    for (sbx_state **link = &G->unrestored; *link; link = &(*link)->next_unrestored) {
        if (*link == S) {
            *link = S->next_unrestored;
            break;
        }
    }
    // What the script held becomes garbage; its blocks stay charged to its ledger until
    // the collector frees them. Its host objects are its host's to release now.
    int refs[] = {S->thread_ref, S->env_ref, S->exports_ref, S->objects_ref, S->classes_ref};
    for (size_t i = 0; i < sizeof refs / sizeof refs[0]; i++) luaL_unref(G->L, LUA_REGISTRYINDEX, refs[i]);
    sbx_ledger *ledger = S->ledger;
    ledger->host = NULL;
    ledger->release_count = 0;
    ledger->closed = 1;
    if (ledger->blocks == 0) ledger_free(ledger);
    group_unlock(G);
    sbx_buffer_free(&S->host_arguments);
    sbx_buffer_free(&S->host_results);
    free(S);
}

void sbx_interrupt(sbx_state *S) { atomic_store(&S->interrupted, 1); }
int64_t sbx_deadline(const sbx_state *S) { return S->deadline_ns; }
int sbx_interrupted(const sbx_state *S) { return atomic_load((atomic_int *)&S->interrupted); }
size_t sbx_memory_used(const sbx_state *S) { return S->ledger->used; }

int sbx_globals_changed(sbx_state *S) {
    group_lock(S->G);
    int changed = S->globals_changed;
    group_unlock(S->G);
    return changed;
}

// MARK: host functions

/// Encodes the arguments from `first` on for a host callback; raises on values that
/// cannot cross.
static void encode_host_arguments(lua_State *L, sbx_state *S, int first) {
    const char *error = encode_tuple(L, first, lua_gettop(L), &S->host_arguments);
    if (error) {
        if (strchr(error, ' ')) luaL_error(L, "%s", error);
        luaL_error(L, "a %s value cannot be passed to a host function", error);
    }
    S->host_results.length = 0;
}

/// Pushes a host callback's results, or raises its error message.
static int finish_host_call(lua_State *L, sbx_state *S, int failed) {
    if (failed) {
        lua_pushlstring(L, (const char *)S->host_results.data, S->host_results.length);
        return lua_error(L);
    }
    return push_tuple(L, S->host_results.data, S->host_results.length);
}

/// Lets other scripts of the group run while this one waits in its host (a sleep, an
/// HTTP request): the host touches none of the state, only the encoded buffers.
static void release_for_host(sbx_state *S) {
    if (S->G->current == S) leave(S);
    if (stall_callback) stall_callback();
}

static void reacquire_after_host(sbx_state *S) {
    if (S != &S->G->own) enter(S);
}

static int host_trampoline(lua_State *L) {
    sbx_state *S = state_of(L);
    int32_t id = (int32_t)lua_tointeger(L, lua_upvalueindex(1));
    encode_host_arguments(L, S, 1);
    void *host = S->ledger->host;
    release_for_host(S);
    int failed = host_callback ? host_callback(host, id, S->host_arguments.data,
                                               S->host_arguments.length, &S->host_results)
                               : 1;
    reacquire_after_host(S);
    return finish_host_call(L, S, failed);
}

/// The handle of the host object at `index` if it is of class `class_id`, else NULL.
static const uint64_t *object_of_class(lua_State *L, int index, int32_t class_id) {
    if (!is_host_object(L, index)) return NULL;
    lua_getmetatable(L, index);
    lua_rawgeti(L, LUA_REGISTRYINDEX, state_of(L)->classes_ref);
    lua_rawgeti(L, -1, class_id);
    int same = lua_rawequal(L, -1, -3);
    lua_pop(L, 3);
    return same ? lua_touserdata(L, index) : NULL;
}

// Upvalues: class id, method number, class name, "class:method".
static int method_trampoline(lua_State *L) {
    sbx_state *S = state_of(L);
    int32_t class_id = (int32_t)lua_tointeger(L, lua_upvalueindex(1));
    int32_t method = (int32_t)lua_tointeger(L, lua_upvalueindex(2));
    const uint64_t *handle = object_of_class(L, 1, class_id);
    if (!handle) {
        const char *got = luaL_typename(L, 1);
        if (is_host_object(L, 1) && luaL_getmetafield(L, 1, "__name") == LUA_TSTRING) got = lua_tostring(L, -1);
        const char *qualified = lua_tostring(L, lua_upvalueindex(4));
        return luaL_error(L, "bad self to '%s' (%s expected, got %s); call it as object:%s(...)",
                          qualified, lua_tostring(L, lua_upvalueindex(3)), got, strrchr(qualified, ':') + 1);
    }
    uint64_t self = *handle;
    encode_host_arguments(L, S, 2);
    void *host = S->ledger->host;
    release_for_host(S);
    int failed = object_callback ? object_callback(host, class_id, method, self, S->host_arguments.data,
                                                   S->host_arguments.length, &S->host_results)
                                 : 1;
    reacquire_after_host(S);
    return finish_host_call(L, S, failed);
}

/// Hands the host the objects the collector released for `S` while others ran.
static void deliver_releases(sbx_state *S) {
    sbx_ledger *ledger = S->ledger;
    for (size_t i = 0; i < ledger->release_count; i++)
        if (object_callback && ledger->host)
            object_callback(ledger->host, ledger->releases[i].class_id, SBX_METHOD_RELEASE,
                            ledger->releases[i].handle, NULL, 0, NULL);
    ledger->release_count = 0;
}

// __gc and __close of host objects (upvalues: class id, the owner's ledger). The collector
// may run it while another script holds the group: the release then waits for the owner.
// Raises nothing: a finalizer's error would only become a warning.
static int object_release(lua_State *L) {
    int32_t class_id = (int32_t)lua_tointeger(L, lua_upvalueindex(1));
    sbx_ledger *owner = lua_touserdata(L, lua_upvalueindex(2));
    if (!owner->host || !object_callback || !is_host_object(L, 1)) return 0;
    uint64_t handle = *(const uint64_t *)lua_touserdata(L, 1);
    if (state_of(L)->ledger == owner) {
        object_callback(owner->host, class_id, SBX_METHOD_RELEASE, handle, NULL, 0, NULL);
        return 0;
    }
    if (owner->release_count == owner->release_capacity) {
        size_t capacity = owner->release_capacity ? owner->release_capacity * 2 : 16;
        void *grown = realloc(owner->releases, capacity * sizeof *owner->releases);
        if (!grown) return 0;  // released with the rest when the script closes
        owner->releases = grown;
        owner->release_capacity = capacity;
    }
    owner->releases[owner->release_count].class_id = class_id;
    owner->releases[owner->release_count].handle = handle;
    owner->release_count++;
    return 0;
}

typedef struct host_function {
    const char *module;
    const char *name;
    int32_t id;
    int is_public;
} host_function;

static int add_host_function(lua_State *L) {
    const host_function *f = lua_touserdata(L, 1);
    lua_pushinteger(L, f->id);
    lua_pushcclosure(L, host_trampoline, 1);
    int closure = lua_gettop(L);
    lua_rawgetp(L, LUA_REGISTRYINDEX, &KEY_HOST);
    luaL_getsubtable(L, -1, f->module);
    lua_pushvalue(L, closure);
    lua_setfield(L, -2, f->name);
    if (f->is_public) {
        lua_rawgetp(L, LUA_REGISTRYINDEX, &KEY_PUBLIC);
        luaL_getsubtable(L, -1, f->module);
        lua_pushvalue(L, closure);
        lua_setfield(L, -2, f->name);
    }
    return 0;
}

int sbx_add_host_function(sbx_group *G, const char *module, const char *name,
                          int32_t function_id, int is_public) {
    if (G->sealed) return -1;
    host_function f = {module, name, function_id, is_public};
    group_lock(G);
    lua_settop(G->L, 0);
    lua_pushcfunction(G->L, add_host_function);
    lua_pushlightuserdata(G->L, &f);
    int status = lua_pcall(G->L, 1, 0, 0);
    lua_settop(G->L, 0);
    group_unlock(G);
    return status == LUA_OK ? 0 : -1;
}

static int seal(lua_State *L) {
    lua_rawgetp(L, LUA_REGISTRYINDEX, &KEY_BASE);
    int base = lua_gettop(L);
    lua_rawgetp(L, LUA_REGISTRYINDEX, &KEY_PUBLIC);
    lua_pushnil(L);
    while (lua_next(L, -2)) {
        make_readonly(L, lua_tostring(L, -2));
        lua_pushvalue(L, -2);
        lua_insert(L, -2);
        lua_rawset(L, base);
    }
    list_base(L);
    return 0;
}

int sbx_seal(sbx_group *G) {
    if (G->sealed) return -1;
    group_lock(G);
    lua_settop(G->L, 0);
    lua_pushcfunction(G->L, seal);
    int status = lua_pcall(G->L, 0, 0, 0);
    lua_settop(G->L, 0);
    group_unlock(G);
    G->sealed = status == LUA_OK;
    return G->sealed ? 0 : -1;
}

// MARK: protected runs

enum { RUN_PRELUDE, RUN_SCRIPT, RUN_CALL };

typedef struct run_request {
    int kind;
    const char *chunk_name;
    const char *source;
    size_t source_length;
    int binary;  // the prelude as bytecode from sbx_compile_stripped; never a script
    const char *entry;
    const uint8_t *arguments;
    size_t arguments_length;
    int syntax_error;
    int value_error;
} run_request;

/// The message handler: records a message that never runs a metamethod, the innermost
/// script line, and a traceback. Returns the error object unchanged.
static int message_handler(lua_State *L) {
    sbx_state *S = state_of(L);
    sbx_outcome *o = S->outcome;
    char scratch[64];
    size_t length = 0;
    const char *text;
    switch (lua_type(L, 1)) {
    case LUA_TSTRING: text = lua_tolstring(L, 1, &length); break;
    case LUA_TNUMBER:
        if (lua_isinteger(L, 1))
            length = (size_t)snprintf(scratch, sizeof scratch, LUA_INTEGER_FMT, lua_tointeger(L, 1));
        else
            length = (size_t)snprintf(scratch, sizeof scratch, LUA_NUMBER_FMT, lua_tonumber(L, 1));
        text = scratch;
        break;
    default:
        length = (size_t)snprintf(scratch, sizeof scratch, "(error object is a %s value)",
                                  luaL_typename(L, 1));
        text = scratch;
    }
    set_text(&o->message, text, length);

    // The innermost frame of a file chunk ('@'), else of any Lua code.
    lua_Debug ar;
    int fallback_found = 0;
    o->location.length = 0;
    for (int level = 1; lua_getstack(L, level, &ar); level++) {
        if (!lua_getinfo(L, "Sl", &ar) || ar.currentline <= 0) continue;
        int is_file = ar.source[0] == '@';
        if (is_file || !fallback_found) {
            length = (size_t)snprintf(scratch, sizeof scratch, ":%d", ar.currentline);
            set_text(&o->location, ar.short_src, strlen(ar.short_src));
            sbx_buffer_append(&o->location, scratch, length);
            fallback_found = 1;
        }
        if (is_file) break;
    }
    luaL_traceback(L, L, NULL, 1);  // may fail at the memory cap; the message is kept
    text = lua_tolstring(L, -1, &length);
    set_text(&o->traceback, text, length);
    lua_settop(L, 1);
    return 1;
}

static void reset_globals(lua_State *L, int env) {
    lua_rawgetp(L, LUA_REGISTRYINDEX, &KEY_BASE_LIST);
    lua_Integer count = (lua_Integer)lua_rawlen(L, -1);
    for (lua_Integer i = 1; i < count; i += 2) {
        lua_rawgeti(L, -1, i);
        lua_rawgeti(L, -2, i + 1);
        lua_rawset(L, env);
    }
    lua_pop(L, 1);
    lua_pushvalue(L, env);
    lua_setfield(L, env, LUA_GNAME);
}

/// Group lock held, after a run: the script's globals may have changed.
static void note_globals_changed(sbx_state *S) {
    S->globals_changed = 1;
    if (S->awaiting_restore) return;
    S->awaiting_restore = 1;
    S->next_unrestored = S->G->unrestored;
    S->G->unrestored = S;
}

static int restore_globals(lua_State *L) {
    sbx_state *S = lua_touserdata(L, 1);
    lua_rawgeti(L, LUA_REGISTRYINDEX, S->env_ref);
    reset_globals(L, lua_gettop(L));
    return 0;
}

/// Group lock held: restores the globals of up to `count` scripts that ran; whether more
/// wait. A restore that fails (the script at its memory cap) is left to its next call.
static int restore_some(sbx_group *G, int count) {
    while (G->unrestored && count-- > 0) {
        sbx_state *S = G->unrestored;
        G->unrestored = S->next_unrestored;
        S->awaiting_restore = 0;
        if (!S->globals_changed) continue;
        G->current = S;  // what the restore allocates is the script's
        lua_pushcfunction(G->L, restore_globals);
        lua_pushlightuserdata(G->L, S);
        if (lua_pcall(G->L, 1, 0, 0) == LUA_OK) S->globals_changed = 0;
        lua_settop(G->L, 0);
        G->current = NULL;
    }
    return G->unrestored != NULL;
}

static int run_chunk(lua_State *L, run_request *rq, int env) {
    int status = luaL_loadbufferx(L, rq->source, rq->source_length, rq->chunk_name, rq->binary ? "b" : "t");
    if (status != LUA_OK) {
        size_t length;
        const char *message = lua_tolstring(L, -1, &length);
        set_text(&state_of(L)->outcome->message, message, length);
        rq->syntax_error = 1;
        return 0;
    }
    lua_pushvalue(L, env);
    lua_setupvalue(L, -2, 1);
    return 1;
}

static int protected_run(lua_State *L) {
    run_request *rq = lua_touserdata(L, 1);
    sbx_state *S = state_of(L);
    lua_settop(L, 0);
    int first = 1;
    switch (rq->kind) {
    case RUN_PRELUDE: {
        lua_newtable(L);  // 1: the prelude's environment
        reset_globals(L, 1);
        lua_rawgetp(L, LUA_REGISTRYINDEX, &KEY_HOST);
        lua_setfield(L, 1, "host");
        lua_pushcfunction(L, readonly_for_prelude);
        lua_setfield(L, 1, "readonly");
        if (!run_chunk(L, rq, 1)) return 0;
        lua_newtable(L);
        lua_insert(L, 2);  // 2: extra globals for the script, 3: the prelude
        lua_pushvalue(L, 2);
        lua_call(L, 1, 1);
        if (!lua_istable(L, -1)) luaL_error(L, "the prelude must return a table of entry points");
        lua_rawsetp(L, LUA_REGISTRYINDEX, &KEY_ENTRIES);
        lua_rawgetp(L, LUA_REGISTRYINDEX, &KEY_BASE);  // 3
        lua_pushnil(L);
        while (lua_next(L, 2)) {
            lua_pushvalue(L, -2);
            lua_insert(L, -2);
            lua_rawset(L, 3);
        }
        list_base(L);
        return 0;
    }
    case RUN_SCRIPT:
        lua_rawgeti(L, LUA_REGISTRYINDEX, S->env_ref);  // 1: the script's globals
        reset_globals(L, 1);
        S->globals_changed = 0;
        if (!run_chunk(L, rq, 1)) return 0;
        lua_call(L, 0, 1);
        if (S->exports_ref == LUA_NOREF) S->exports_ref = luaL_ref(L, LUA_REGISTRYINDEX);
        else lua_rawseti(L, LUA_REGISTRYINDEX, S->exports_ref);
        return 0;
    default: {
        if (S->globals_changed) {
            lua_rawgeti(L, LUA_REGISTRYINDEX, S->env_ref);
            reset_globals(L, 1);
            S->globals_changed = 0;
        }
        lua_settop(L, 0);
        int nargs = 0;
        if (lua_rawgetp(L, LUA_REGISTRYINDEX, &KEY_ENTRIES) == LUA_TTABLE &&
            lua_getfield(L, -1, rq->entry) == LUA_TFUNCTION) {
            lua_remove(L, 1);
            lua_rawgeti(L, LUA_REGISTRYINDEX, S->exports_ref);
            nargs = 1;
        } else {
            lua_settop(L, 0);
            if (lua_rawgeti(L, LUA_REGISTRYINDEX, S->exports_ref) != LUA_TTABLE)
                luaL_error(L, "the script returned no table, so it has no function '%s'", rq->entry);
            lua_pushstring(L, rq->entry);
            if (lua_rawget(L, 1) != LUA_TFUNCTION)
                luaL_error(L, "the script has no function '%s'", rq->entry);
            lua_remove(L, 1);
        }
        nargs += push_tuple(L, rq->arguments, rq->arguments_length);
        lua_call(L, nargs, LUA_MULTRET);
        const char *error = encode_tuple(L, first, lua_gettop(L), &S->outcome->results);
        if (error) {
            rq->value_error = 1;
            if (strchr(error, ' ')) return luaL_error(L, "%s", error);
            return luaL_error(L, "a %s value cannot leave the sandbox", error);
        }
        return 0;
    }
    }
}

static void run(sbx_state *S, run_request *rq, int64_t deadline_ns, sbx_outcome *o) {
    sbx_group *G = S->G;
    int own = S == &G->own;
    // Cleared before waiting for the group, so a cancel that comes meanwhile still counts.
    atomic_store(&S->interrupted, 0);
    if (own) group_lock(G);
    else enter(S);
    deliver_releases(S);
    lua_State *L = S->L;
    memset(o, 0, sizeof *o);
    S->outcome = o;
    S->log_records = 0;
    S->stall_reported = 0;
    S->deadline_ns = deadline_ns;
    S->deadline_exceeded = 0;
    S->memory_exceeded = 0;
    lua_settop(L, 0);
    // Light C functions and light userdata: nothing here allocates outside protection.
    lua_pushcfunction(L, message_handler);
    lua_pushcfunction(L, protected_run);
    lua_pushlightuserdata(L, rq);
    int status = lua_pcall(L, 1, 0, 1);
    if (status == LUA_OK && rq->syntax_error) o->status = SBX_ERROR_SYNTAX;
    else if (status == LUA_OK) o->status = SBX_OK;
    else if (S->memory_exceeded || status == LUA_ERRMEM) o->status = SBX_ERROR_MEMORY;
    else if (S->deadline_exceeded) o->status = SBX_ERROR_DEADLINE;
    else if (atomic_load(&S->interrupted)) o->status = SBX_ERROR_INTERRUPTED;
    else if (rq->value_error) o->status = SBX_ERROR_VALUE;
    else o->status = SBX_ERROR_RUNTIME;
    if (status == LUA_ERRERR && o->message.length == 0)
        set_text(&o->message, "error in error handling", 23);
    lua_settop(L, 0);
    if (lua_checkstack(L, SBX_IDLE_STACK_SLOTS)) lua_settop(L, SBX_IDLE_STACK_SLOTS);
    S->deadline_ns = 0;
    S->outcome = NULL;
    if (own) {
        group_unlock(G);
    } else {
        note_globals_changed(S);
        leave(S);
    }
}

void sbx_run_prelude(sbx_group *G, const char *chunk_name, const char *source,
                     size_t source_length, int64_t deadline_ns, sbx_outcome *outcome) {
    run_request rq = {.kind = RUN_PRELUDE, .chunk_name = chunk_name, .source = source,
                      .source_length = source_length};
    run(&G->own, &rq, deadline_ns, outcome);
}

void sbx_run_compiled_prelude(sbx_group *G, const char *chunk_name, const uint8_t *bytecode,
                              size_t bytecode_length, int64_t deadline_ns, sbx_outcome *outcome) {
    run_request rq = {.kind = RUN_PRELUDE, .chunk_name = chunk_name, .source = (const char *)bytecode,
                      .source_length = bytecode_length, .binary = 1};
    run(&G->own, &rq, deadline_ns, outcome);
}

static int dump_writer(lua_State *L, const void *bytes, size_t length, void *buffer) {
    (void)L;
    return sbx_buffer_append(buffer, bytes, length);
}

int sbx_compile_stripped(const char *chunk_name, const char *source, size_t source_length,
                         sbx_buffer *bytecode) {
    lua_State *L = luaL_newstate();
    if (!L) return -1;
    int failed = luaL_loadbufferx(L, source, source_length, chunk_name, "t") != LUA_OK ||
                 lua_dump(L, dump_writer, bytecode, 1) != 0;
    lua_close(L);
    return failed ? -1 : 0;
}

void sbx_load_script(sbx_state *S, const char *chunk_name, const char *source,
                     size_t source_length, int64_t deadline_ns, sbx_outcome *outcome) {
    run_request rq = {.kind = RUN_SCRIPT, .chunk_name = chunk_name, .source = source,
                      .source_length = source_length};
    run(S, &rq, deadline_ns, outcome);
    if (outcome->status == SBX_OK) S->loaded = 1;
}

void sbx_call(sbx_state *S, const char *entry, const uint8_t *arguments,
              size_t arguments_length, int64_t deadline_ns, sbx_outcome *outcome) {
    if (!S->loaded) {
        memset(outcome, 0, sizeof *outcome);
        outcome->status = SBX_ERROR_RUNTIME;
        set_text(&outcome->message, "no script is loaded", 19);
        return;
    }
    run_request rq = {.kind = RUN_CALL, .entry = entry, .arguments = arguments,
                      .arguments_length = arguments_length};
    run(S, &rq, deadline_ns, outcome);
}
