// Read-only proxies of libraries, and the trampolines by which scripts call host functions
// and methods of host objects.
#include "sandbox_internal.h"

// MARK: read-only proxies

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
void hh_make_readonly(lua_State *L, const char *name) {
    int library = lua_gettop(L);
    lua_newuserdatauv(L, 0, 0);
    lua_createtable(L, 0, 5);
    lua_pushvalue(L, library);
    lua_setfield(L, -2, "__index");
    lua_pushstring(L, name);
    lua_pushcclosure(L, readonly_newindex, 1);
    lua_setfield(L, -2, "__newindex");
    lua_pushvalue(L, library);
    lua_rawgetp(L, LUA_REGISTRYINDEX, &hh_key_base);
    lua_getfield(L, -1, "next");
    lua_remove(L, -2);
    lua_pushcclosure(L, readonly_pairs, 2);
    lua_setfield(L, -2, "__pairs");
    lua_pushliteral(L, "read-only");
    lua_setfield(L, -2, "__metatable");
    lua_setmetatable(L, -2);
    lua_replace(L, library);
}

int hh_readonly_for_prelude(lua_State *L) {
    luaL_checktype(L, 1, LUA_TTABLE);
    const char *name = luaL_optstring(L, 2, "table");
    lua_settop(L, 1);
    hh_make_readonly(L, name);
    return 1;
}

static sbx_host_callback host_callback;
static sbx_object_callback object_callback;

void sbx_set_host_callback(sbx_host_callback callback) { host_callback = callback; }
void sbx_set_object_callback(sbx_object_callback callback) { object_callback = callback; }

// MARK: host functions

/// Encodes the arguments from `first` on for a host callback; raises on values that
/// cannot cross.
static void encode_host_arguments(lua_State *L, sbx_state *S, int first) {
    const char *error = hh_encode_tuple(L, first, lua_gettop(L), &S->host_arguments);
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
    return hh_push_tuple(L, S->host_results.data, S->host_results.length);
}

/// Lets other scripts of the group run while this one waits in its host (a sleep, an
/// HTTP request): the host touches none of the state, only the encoded buffers.
static void release_for_host(sbx_state *S) {
    if (S->G->current == S) hh_leave(S);
    if (hh_stall_callback) hh_stall_callback();
}

static void reacquire_after_host(sbx_state *S) {
    if (S != &S->G->own) hh_enter(S);
}

static int host_trampoline(lua_State *L) {
    sbx_state *S = hh_state_of(L);
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
    if (!hh_is_host_object(L, index)) return NULL;
    lua_getmetatable(L, index);
    lua_rawgeti(L, LUA_REGISTRYINDEX, hh_state_of(L)->classes_ref);
    lua_rawgeti(L, -1, class_id);
    int same = lua_rawequal(L, -1, -3);
    lua_pop(L, 3);
    return same ? lua_touserdata(L, index) : NULL;
}

// Upvalues: class id, method number, class name, "class:method".
int hh_method_trampoline(lua_State *L) {
    sbx_state *S = hh_state_of(L);
    int32_t class_id = (int32_t)lua_tointeger(L, lua_upvalueindex(1));
    int32_t method = (int32_t)lua_tointeger(L, lua_upvalueindex(2));
    const uint64_t *handle = object_of_class(L, 1, class_id);
    if (!handle) {
        const char *got = luaL_typename(L, 1);
        if (hh_is_host_object(L, 1) && luaL_getmetafield(L, 1, "__name") == LUA_TSTRING) got = lua_tostring(L, -1);
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
void hh_deliver_releases(sbx_state *S) {
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
int hh_object_release(lua_State *L) {
    int32_t class_id = (int32_t)lua_tointeger(L, lua_upvalueindex(1));
    sbx_ledger *owner = lua_touserdata(L, lua_upvalueindex(2));
    if (!owner->host || !object_callback || !hh_is_host_object(L, 1)) return 0;
    uint64_t handle = *(const uint64_t *)lua_touserdata(L, 1);
    if (hh_state_of(L)->ledger == owner) {
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
    lua_rawgetp(L, LUA_REGISTRYINDEX, &hh_key_host);
    luaL_getsubtable(L, -1, f->module);
    lua_pushvalue(L, closure);
    lua_setfield(L, -2, f->name);
    if (f->is_public) {
        lua_rawgetp(L, LUA_REGISTRYINDEX, &hh_key_public);
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
    hh_group_lock(G);
    lua_settop(G->L, 0);
    lua_pushcfunction(G->L, add_host_function);
    lua_pushlightuserdata(G->L, &f);
    int status = lua_pcall(G->L, 1, 0, 0);
    lua_settop(G->L, 0);
    hh_group_unlock(G);
    return status == LUA_OK ? 0 : -1;
}

static int seal(lua_State *L) {
    lua_rawgetp(L, LUA_REGISTRYINDEX, &hh_key_base);
    int base = lua_gettop(L);
    lua_rawgetp(L, LUA_REGISTRYINDEX, &hh_key_public);
    lua_pushnil(L);
    while (lua_next(L, -2)) {
        hh_make_readonly(L, lua_tostring(L, -2));
        lua_pushvalue(L, -2);
        lua_insert(L, -2);
        lua_rawset(L, base);
    }
    hh_list_base(L);
    return 0;
}

int sbx_seal(sbx_group *G) {
    if (G->sealed) return -1;
    hh_group_lock(G);
    lua_settop(G->L, 0);
    lua_pushcfunction(G->L, seal);
    int status = lua_pcall(G->L, 0, 0, 0);
    lua_settop(G->L, 0);
    hh_group_unlock(G);
    G->sealed = status == LUA_OK;
    return G->sealed ? 0 : -1;
}
