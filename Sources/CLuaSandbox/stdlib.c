// The standard library as scripts see it: unsafe functions left out or replaced, libraries
// behind read-only proxies, and the table of standard globals every call starts with.
#include "sandbox_internal.h"

// MARK: sandboxed replacements of standard functions

static int finish_pcall(lua_State *L, int status, lua_KContext extra) {
    if (status != LUA_OK && status != LUA_YIELD) {
        if (hh_must_propagate(hh_state_of(L), status)) return lua_error(L);
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
    if (hh_must_propagate(hh_state_of(L), status)) lua_error(L);
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
    else lua_rawgeti(L, LUA_REGISTRYINDEX, hh_state_of(L)->env_ref);  // the script's own globals
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
    lua_pushnumber(L, (lua_Number)hh_state_of(L)->ledger->used / 1024);
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
    sbx_log(hh_state_of(L), SBX_LOG_PRINT, line, length);
    return 0;
}

// MARK: building the sandbox

/// Copies the table of standard globals into one sequence, each key then its value, for
/// `reset_globals`: walking it reads an array, where `lua_next` on the table looks each key
/// up again to find the next. Called, as the group's own code, whenever the table changes.
void hh_list_base(lua_State *L) {
    lua_rawgetp(L, LUA_REGISTRYINDEX, &hh_key_base);
    lua_newtable(L);
    lua_Integer count = 0;
    lua_pushnil(L);
    while (lua_next(L, -3)) {
        lua_pushvalue(L, -2);
        lua_rawseti(L, -4, ++count);  // the key
        lua_rawseti(L, -3, ++count);  // its value
    }
    lua_rawsetp(L, LUA_REGISTRYINDEX, &hh_key_base_list);
    lua_pop(L, 1);
}

static const char *const base_functions[] = {
    "assert", "error", "getmetatable", "ipairs", "next", "pairs", "rawequal", "rawget",
    "rawlen", "rawset", "select", "tonumber", "tostring", "type", "_VERSION", NULL};

static const char *const os_functions[] = {"clock", "time", "date", "difftime", NULL};

/// Builds the table of standard globals every script starts each call with.
int hh_build_base(lua_State *L) {
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
    lua_rawsetp(L, LUA_REGISTRYINDEX, &hh_key_base);

    const struct { int index; const char *name; } libraries[] = {
        {string, LUA_STRLIBNAME}, {table, LUA_TABLIBNAME}, {math, LUA_MATHLIBNAME},
        {utf8, LUA_UTF8LIBNAME}, {coroutine, LUA_COLIBNAME}, {os, LUA_OSLIBNAME}};
    for (size_t i = 0; i < sizeof libraries / sizeof libraries[0]; i++) {
        lua_pushvalue(L, libraries[i].index);
        hh_make_readonly(L, libraries[i].name);
        lua_setfield(L, base, libraries[i].name);
    }

    // Nothing reaches the real global table, but empty it all the same.
    lua_newtable(L);
    lua_rawseti(L, LUA_REGISTRYINDEX, LUA_RIDX_GLOBALS);
    lua_newtable(L);
    lua_rawsetp(L, LUA_REGISTRYINDEX, &hh_key_host);
    lua_newtable(L);
    lua_rawsetp(L, LUA_REGISTRYINDEX, &hh_key_public);
    hh_list_base(L);
    return 0;
}
