// Protected runs: the prelude, loading a script, calls, and restoring a script's globals.
#include "sandbox_internal.h"

// Stack slots a script's thread keeps in use between calls. The collector shrinks every
// idle thread's stack to twice what it uses, and the next call grew it again: two blocks
// over 1 KiB per script per cycle, each of which made glibc consolidate its fast bins
// (a tenth of a worker's time in a 100-helper evaluate).
#define SBX_IDLE_STACK_SLOTS 48

// Scripts whose globals a quiet worker restores in one step, between which a call can start.
#define SBX_RESTORES_PER_STEP 8

// A registry key of the group (its address is a unique light userdata): the prelude's
// table of entry points.
static const char KEY_ENTRIES = 0;

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
    sbx_state *S = hh_state_of(L);
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
    hh_set_text(&o->message, text, length);

    // The innermost frame of a file chunk ('@'), else of any Lua code.
    lua_Debug ar;
    int fallback_found = 0;
    o->location.length = 0;
    for (int level = 1; lua_getstack(L, level, &ar); level++) {
        if (!lua_getinfo(L, "Sl", &ar) || ar.currentline <= 0) continue;
        int is_file = ar.source[0] == '@';
        if (is_file || !fallback_found) {
            length = (size_t)snprintf(scratch, sizeof scratch, ":%d", ar.currentline);
            hh_set_text(&o->location, ar.short_src, strlen(ar.short_src));
            sbx_buffer_append(&o->location, scratch, length);
            fallback_found = 1;
        }
        if (is_file) break;
    }
    luaL_traceback(L, L, NULL, 1);  // may fail at the memory cap; the message is kept
    text = lua_tolstring(L, -1, &length);
    hh_set_text(&o->traceback, text, length);
    lua_settop(L, 1);
    return 1;
}

static void reset_globals(lua_State *L, int env) {
    lua_rawgetp(L, LUA_REGISTRYINDEX, &hh_key_base_list);
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

int sbx_group_tidy_idle(sbx_group *G) {
    if (!hh_group_trylock(G)) return -1;
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
    hh_group_unlock(G);
    return more;
}

static int run_chunk(lua_State *L, run_request *rq, int env) {
    int status = luaL_loadbufferx(L, rq->source, rq->source_length, rq->chunk_name, rq->binary ? "b" : "t");
    if (status != LUA_OK) {
        size_t length;
        const char *message = lua_tolstring(L, -1, &length);
        hh_set_text(&hh_state_of(L)->outcome->message, message, length);
        rq->syntax_error = 1;
        return 0;
    }
    lua_pushvalue(L, env);
    lua_setupvalue(L, -2, 1);
    return 1;
}

static int protected_run(lua_State *L) {
    run_request *rq = lua_touserdata(L, 1);
    sbx_state *S = hh_state_of(L);
    lua_settop(L, 0);
    int first = 1;
    switch (rq->kind) {
    case RUN_PRELUDE: {
        lua_newtable(L);  // 1: the prelude's environment
        reset_globals(L, 1);
        lua_rawgetp(L, LUA_REGISTRYINDEX, &hh_key_host);
        lua_setfield(L, 1, "host");
        lua_pushcfunction(L, hh_readonly_for_prelude);
        lua_setfield(L, 1, "readonly");
        if (!run_chunk(L, rq, 1)) return 0;
        lua_newtable(L);
        lua_insert(L, 2);  // 2: extra globals for the script, 3: the prelude
        lua_pushvalue(L, 2);
        lua_call(L, 1, 1);
        if (!lua_istable(L, -1)) luaL_error(L, "the prelude must return a table of entry points");
        lua_rawsetp(L, LUA_REGISTRYINDEX, &KEY_ENTRIES);
        lua_rawgetp(L, LUA_REGISTRYINDEX, &hh_key_base);  // 3
        lua_pushnil(L);
        while (lua_next(L, 2)) {
            lua_pushvalue(L, -2);
            lua_insert(L, -2);
            lua_rawset(L, 3);
        }
        hh_list_base(L);
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
        nargs += hh_push_tuple(L, rq->arguments, rq->arguments_length);
        lua_call(L, nargs, LUA_MULTRET);
        const char *error = hh_encode_tuple(L, first, lua_gettop(L), &S->outcome->results);
        if (error) {
            rq->value_error = 1;
            if (strchr(error, ' ')) return luaL_error(L, "%s", error);
            return luaL_error(L, "a %s value cannot leave the sandbox", error);
        }
        return 0;
    }
    }
}

static void run(sbx_state *S, run_request *rq, int64_t deadline_ns, int64_t cpu_limit_ns, sbx_outcome *o) {
    sbx_group *G = S->G;
    int own = S == &G->own;
    // Cleared before waiting for the group, so a cancel that comes meanwhile still counts.
    atomic_store(&S->interrupted, 0);
    if (own) hh_group_lock(G);
    else hh_enter(S);
    hh_deliver_releases(S);
    lua_State *L = S->L;
    memset(o, 0, sizeof *o);
    S->outcome = o;
    S->log_records = 0;
    S->stall_reported = 0;
    S->deadline_ns = deadline_ns;
    S->deadline_exceeded = 0;
    S->cpu_limit_ns = cpu_limit_ns;
    S->cpu_started_ns = cpu_limit_ns ? hh_thread_cpu_ns() : 0;
    S->cpu_exceeded = 0;
    S->memory_exceeded = 0;
    S->ledger->worker_refused = 0;
    lua_settop(L, 0);
    // Light C functions and light userdata: nothing here allocates outside protection.
    lua_pushcfunction(L, message_handler);
    lua_pushcfunction(L, protected_run);
    lua_pushlightuserdata(L, rq);
    int status = lua_pcall(L, 1, 0, 1);
    if (status == LUA_OK && rq->syntax_error) o->status = SBX_ERROR_SYNTAX;
    else if (status == LUA_OK) o->status = SBX_OK;
    else if ((S->memory_exceeded || status == LUA_ERRMEM) && S->ledger->worker_refused)
        o->status = SBX_ERROR_WORKER_MEMORY;
    else if (S->memory_exceeded || status == LUA_ERRMEM) o->status = SBX_ERROR_MEMORY;
    else if (S->deadline_exceeded) o->status = SBX_ERROR_DEADLINE;
    else if (S->cpu_exceeded) o->status = SBX_ERROR_CPU;
    else if (atomic_load(&S->interrupted)) o->status = SBX_ERROR_INTERRUPTED;
    else if (rq->value_error) o->status = SBX_ERROR_VALUE;
    else o->status = SBX_ERROR_RUNTIME;
    if (status == LUA_ERRERR && o->message.length == 0)
        hh_set_text(&o->message, "error in error handling", 23);
    lua_settop(L, 0);
    if (lua_checkstack(L, SBX_IDLE_STACK_SLOTS)) lua_settop(L, SBX_IDLE_STACK_SLOTS);
    S->deadline_ns = 0;
    S->cpu_limit_ns = 0;
    S->outcome = NULL;
    if (own) {
        hh_group_unlock(G);
    } else {
        note_globals_changed(S);
        hh_leave(S);
    }
}

void sbx_run_prelude(sbx_group *G, const char *chunk_name, const char *source,
                     size_t source_length, int64_t deadline_ns, sbx_outcome *outcome) {
    run_request rq = {.kind = RUN_PRELUDE, .chunk_name = chunk_name, .source = source,
                      .source_length = source_length};
    run(&G->own, &rq, deadline_ns, 0, outcome);
}

void sbx_run_compiled_prelude(sbx_group *G, const char *chunk_name, const uint8_t *bytecode,
                              size_t bytecode_length, int64_t deadline_ns, sbx_outcome *outcome) {
    run_request rq = {.kind = RUN_PRELUDE, .chunk_name = chunk_name, .source = (const char *)bytecode,
                      .source_length = bytecode_length, .binary = 1};
    run(&G->own, &rq, deadline_ns, 0, outcome);
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
    run(S, &rq, deadline_ns, 0, outcome);
    if (outcome->status == SBX_OK) S->loaded = 1;
}

void sbx_call(sbx_state *S, const char *entry, const uint8_t *arguments,
              size_t arguments_length, int64_t deadline_ns, int64_t cpu_limit_ns, sbx_outcome *outcome) {
    if (!S->loaded) {
        memset(outcome, 0, sizeof *outcome);
        outcome->status = SBX_ERROR_RUNTIME;
        hh_set_text(&outcome->message, "no script is loaded", 19);
        return;
    }
    run_request rq = {.kind = RUN_CALL, .entry = entry, .arguments = arguments,
                      .arguments_length = arguments_length};
    run(S, &rq, deadline_ns, cpu_limit_ns, outcome);
}
