// The group, its ticket lock, and opening and closing the scripts' states in it.
#include "sandbox_internal.h"

// Instructions between two hook checks: about 10 microseconds of Lua code.
#define SBX_HOOK_COUNT 1000

const char hh_key_base = 0, hh_key_base_list = 0, hh_key_host = 0, hh_key_public = 0;

void (*hh_stall_callback)(void);

void sbx_set_stall_callback(void (*callback)(void)) { hh_stall_callback = callback; }

void hh_group_lock(sbx_group *G) {
    pthread_mutex_lock(&G->mutex);
    uint64_t ticket = atomic_fetch_add(&G->next_ticket, 1);
    if (atomic_load(&G->serving) != ticket && hh_stall_callback) {
        pthread_mutex_unlock(&G->mutex);
        hh_stall_callback();
        pthread_mutex_lock(&G->mutex);
    }
    while (atomic_load(&G->serving) != ticket) pthread_cond_wait(&G->turn, &G->mutex);
    pthread_mutex_unlock(&G->mutex);
}

/// Takes the lock only if nobody holds it or waits for it.
int hh_group_trylock(sbx_group *G) {
    pthread_mutex_lock(&G->mutex);
    uint64_t ticket = atomic_load(&G->next_ticket);
    int free = atomic_load(&G->serving) == ticket;
    if (free) atomic_store(&G->next_ticket, ticket + 1);
    pthread_mutex_unlock(&G->mutex);
    return free;
}

void hh_group_unlock(sbx_group *G) {
    pthread_mutex_lock(&G->mutex);
    atomic_fetch_add(&G->serving, 1);
    pthread_cond_broadcast(&G->turn);
    pthread_mutex_unlock(&G->mutex);
}

/// Runs `S` with the lock held: takes the lock and makes `S` the current script.
void hh_enter(sbx_state *S) {
    atomic_store(&S->waiting_for_group, 1);
    hh_group_lock(S->G);
    atomic_store(&S->waiting_for_group, 0);
    S->G->current = S;
    S->entered_ns = sbx_monotonic_ns();
}

void hh_leave(sbx_state *S) {
    S->G->current = NULL;
    hh_group_unlock(S->G);
}

int sbx_group_takers(sbx_group *G) {
    return (int)(atomic_load(&G->next_ticket) - atomic_load(&G->serving));
}

static sbx_group *group_of(lua_State *L) {
    void *ud;
    lua_getallocf(L, &ud);
    return ud;
}

/// The script whose code runs (the group's own state during setup and the prelude).
sbx_state *hh_state_of(lua_State *L) {
    sbx_group *G = group_of(L);
    return G->current ? G->current : &G->own;
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
    G->L = lua_newstate(hh_capped_alloc, G);
    if (!G->L) {
        hh_worker_release_slack(G);
        pthread_cond_destroy(&G->turn);
        pthread_mutex_destroy(&G->mutex);
        free(G);
        return NULL;
    }
    lua_State *L = G->own.L = G->L;
    // Every thread copies this hook from its creator, so it is set before any script runs.
    lua_sethook(L, hh_deadline_hook, LUA_MASKCOUNT, SBX_HOOK_COUNT);
    lua_pushcfunction(L, hh_build_base);
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
    hh_worker_release_slack(G);
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
    hh_enter(S);
    lua_State *L = G->L;
    lua_pushcfunction(L, open_script);
    lua_pushlightuserdata(L, S);
    int status = lua_pcall(L, 1, 0, 0);
    lua_settop(L, 0);
    hh_leave(S);
    if (status != LUA_OK) {
        sbx_close(S);
        return NULL;
    }
    return S;
}

void sbx_close(sbx_state *S) {
    if (!S) return;
    sbx_group *G = S->G;
    hh_group_lock(G);
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
    if (ledger->blocks == 0) hh_ledger_free(ledger);
    hh_group_unlock(G);
    sbx_buffer_free(&S->host_arguments);
    sbx_buffer_free(&S->host_results);
    free(S);
}

void sbx_interrupt(sbx_state *S) { atomic_store(&S->interrupted, 1); }
int64_t sbx_deadline(const sbx_state *S) { return S->deadline_ns; }
int sbx_interrupted(const sbx_state *S) { return atomic_load((atomic_int *)&S->interrupted); }

int sbx_waiting_for_group(const sbx_state *S) { return atomic_load((atomic_int *)&S->waiting_for_group); }
size_t sbx_memory_used(const sbx_state *S) { return S->ledger->used; }

int sbx_globals_changed(sbx_state *S) {
    hh_group_lock(S->G);
    int changed = S->globals_changed;
    hh_group_unlock(S->G);
    return changed;
}
