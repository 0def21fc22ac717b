// Buffers, the encoding of values that cross the sandbox's edge, and log records.
#include <stdio.h>
#include "sandbox_internal.h"

// A registry key of the group (its address is a unique light userdata), which also marks
// the metatables of host classes.
static const char KEY_CLASSES = 0;

// Per call: at most this many log records and bytes; the rest are counted as dropped.
#define SBX_LOG_RECORDS 200
#define SBX_LOG_BYTES (64 * 1024)
#define SBX_LOG_RECORD_BYTES 4096

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

int hh_set_text(sbx_buffer *b, const char *text, size_t length) {
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

// MARK: value encoding

static const char *encode_value(lua_State *L, int index, sbx_buffer *b, int depth,
                                const void **path);

/// Whether the value at `index` is a host object (its metatable carries the class mark).
int hh_is_host_object(lua_State *L, int index) {
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
    // The decoders' limit, checked as they check it, on every value: a table at the
    // deepest level crosses if it is empty.
    if (depth > SBX_MAX_DEPTH) return "a table nested too deeply to leave the sandbox";
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
        if (hh_is_host_object(L, index))
            return "a host object cannot be copied out of its Lua state; only its methods use it";
        return "userdata";
    default: return lua_typename(L, lua_type(L, index));
    }
    return fail ? "out of memory" : NULL;
}

/// Encodes the stack slots first..last as a tuple. On failure returns a message; a bare
/// type name means a value of that type cannot leave the sandbox.
const char *hh_encode_tuple(lua_State *L, int first, int last, sbx_buffer *b) {
    const void *path[SBX_MAX_DEPTH + 1];  // the tables being encoded, by depth
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

/// Pushes the metatable of host class `class_id`, building it from the description in
/// `r` the first time; the description is consumed either way.
static int push_class(lua_State *L, reader *r, uint32_t class_id) {
    const char *name, *method;
    uint32_t name_length, method_length, method_count;
    if (read_text(r, &name, &name_length) || read_u32(r, &method_count) ||
        method_count > r->length - r->position)
        return -1;
    sbx_state *S = hh_state_of(L);
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
        lua_pushcclosure(L, hh_method_trampoline, 4);
        lua_rawset(L, -3);
    }
    lua_setfield(L, metatable, "__index");
    lua_pushlstring(L, name, name_length);
    lua_setfield(L, metatable, "__name");
    lua_pushliteral(L, "locked");
    lua_setfield(L, metatable, "__metatable");
    lua_pushinteger(L, class_id);
    lua_pushlightuserdata(L, S->ledger);  // lives as long as this closure, charged to it
    lua_pushcclosure(L, hh_object_release, 2);
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
    lua_rawgeti(L, LUA_REGISTRYINDEX, hh_state_of(L)->objects_ref);
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

int hh_push_tuple(lua_State *L, const uint8_t *data, size_t length) {
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
    // A longer line keeps its start and says it was cut, and how long it was, so a reader
    // does not take the cut for the end; the cut falls between UTF-8 characters.
    char mark[48];
    size_t mark_length = 0, kept = length;
    if (length > SBX_LOG_RECORD_BYTES) {
        mark_length = (size_t)snprintf(mark, sizeof mark, " [cut: %zu bytes in all]", length);
        kept = SBX_LOG_RECORD_BYTES - mark_length;
        while (kept > 0 && ((unsigned char)message[kept] & 0xC0) == 0x80) kept--;
    }
    size_t record_length = kept + mark_length;
    if (S->log_records >= SBX_LOG_RECORDS || o->logs.length + record_length + 5 > SBX_LOG_BYTES) {
        o->dropped_logs++;
        return;
    }
    if (append_u8(&o->logs, (uint8_t)level) || append_u32(&o->logs, (uint32_t)record_length) ||
        sbx_buffer_append(&o->logs, message, kept) || sbx_buffer_append(&o->logs, mark, mark_length)) {
        o->dropped_logs++;
        return;
    }
    S->log_records++;
}
